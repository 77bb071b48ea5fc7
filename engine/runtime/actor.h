#pragma once
// Actor: the pure state machine that runs one task of a Plan. It has no threads, clocks or I/O:
// executors feed it messages and completions, and carry out what it asks. The ThreadedExecutor
// and the simulator drive the same Actor, so back-pressure, ordering and termination are
// identical for real and simulated runs. The same inputs in the same order always give the
// same outputs.
//
// Registers and pieces. Each register is a ring of `slots` buffers; its producer fills one slot
// per piece it produces (pieces 0, 1, 2, ... in order) and announces it to every consumer with
// RegstReady. A consumer returns the slot with RegstFree when its act on that piece is done; a
// slot is free for the producer again once every consumer has returned it.
//
// When an actor acts. It acts on its next piece when (a) for every consumed register the piece
// it needs is ready (a register with lag L needs piece p - L for act p, nothing while p < L),
// and (b) every produced register has a free slot. An order register (plan.proto Regst
// order_counts, a device's pipeline schedule) is a control register that holds no slot: its
// consumer counts the producer's pieces, returns each at once, and acts when the count reaches
// what the register's table asks for that act. One act is in flight at a time: Launch, then
// the executor reports Done. Rates: most actors consume and produce one piece per act. ACC
// holds its output slot over acc_count acts and produces one piece per acc_count inputs (but a
// piece of each control register every act); REPEAT
// holds its input slot over repeat_count acts and produces a piece per act; a REPEAT that
// reads in place (Task.repeat_in_place: its outputs are its input's bytes) holds the input
// until every piece made from it has come back. SOURCE, VARIABLE
// and RECV have no inputs and act `pieces` times (given by the executor: micro-batches x steps
// for data, steps for variables, its peer SEND's acts for a RECV).
//
// Termination. After its last act an actor sends Eord (with its piece count) on every produced
// register. An actor knows it has no more acts once every input it needs has sent Eord and all
// announced pieces are consumed; pieces of lagged registers it will never act on are returned
// unused. It is finished when it has seen Eord on every input, returned every slot it holds,
// sent its own Eords, and got every produced slot back.
//
// Messages may arrive in any order, even out of piece order on one register: the actor buffers
// them and always consumes pieces in order.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::runtime {

struct RegstReady {
  int64_t regst = 0;
  int32_t slot = 0;
  int64_t piece = 0;
};
struct RegstFree {
  int64_t regst = 0;
  int32_t slot = 0;
};
struct Eord {
  int64_t regst = 0;
  int64_t pieces = 0;  // how many pieces the register carried in all
};
using ActorMessage = std::variant<RegstReady, RegstFree, Eord>;

// A message for another actor (the task that consumes or produces the register).
struct Envelope {
  int64_t to_task = 0;
  ActorMessage message;
};

struct SlotRef {
  int64_t regst = 0;
  int32_t slot = 0;
  int64_t piece = 0;
};

// Run task `task` on piece `piece`, reading the input slots and writing the output slots
// (both in the task's register order). `first`/`last` mark an ACC's first and last
// accumulation into its output piece and a REPEAT's first and last act on an input piece.
struct Launch {
  int64_t task = 0;
  int64_t piece = 0;
  std::vector<SlotRef> inputs;
  std::vector<SlotRef> outputs;
  bool first = true;
  bool last = true;
};

struct Outbox {
  std::vector<Launch> launches;
  std::vector<Envelope> messages;
};

// Lifetime: keeps `plan` by reference; it must outlive the actor (the executors and the
// simulator make their actors per run from a Plan they hold for longer).
class Actor {
 public:
  // `pieces` is the number of acts of a SOURCE, VARIABLE or RECV (ignored by other kinds). Throws
  // PlanError when the task's registers do not fit its kind.
  Actor(const plan::Plan& plan, int64_t task, int64_t pieces);

  // The first actions: a source with free slots launches at once.
  void Start(Outbox& out);
  void Receive(const ActorMessage& message, Outbox& out);
  // The executor finished the launched act.
  void Done(Outbox& out);

  int64_t task() const { return task_; }
  bool finished() const;
  int64_t acts() const { return acts_; }
  bool busy() const { return busy_; }
  // What the actor waits for, e.g. "layer0/matmul@1 waits for regst 12 piece 3 (from
  // x@1); output regst 14 has no free slot (held by layer1/matmul@1)". For watchdogs and
  // deadlock reports.
  std::string WaitingOn() const;

 private:
  // A consumed register: announced pieces wait in `ready` until the act that needs them.
  struct Input {
    int64_t regst = 0;
    int64_t producer = 0;
    int32_t slots = 1;
    int32_t lag = 0;
    std::vector<int64_t> order;        // an order register's counts per act of a step (else empty)
    std::map<int64_t, int32_t> ready;  // piece -> slot, announced and not yet taken
    bool in_use = false;               // `use` is held by the current act (or a REPEAT)
    bool lent = false;  // an in-place REPEAT's acts on `use` are done; its outputs are not back
    SlotRef use;
    int64_t next = 0;  // the next piece to take; every piece below it was taken or returned
    std::set<int64_t> returned_unused;  // pieces >= next returned after the last act
    int64_t received = 0;               // distinct pieces announced
    int64_t eord = -1;                  // the piece count from Eord, -1 until it arrives
    int64_t max_piece = -1;
  };
  // A produced register: a ring of slots, each counting the consumers that still hold it.
  struct Output {
    int64_t regst = 0;
    int32_t slots = 1;
    std::vector<int64_t> consumers;
    std::vector<int32_t> holders;  // per slot: consumers that have not returned it
    int64_t produced = 0;          // pieces announced
    // A control register of an ACC: a piece every act, not every acc_count acts, so that the
    // ACC can sit in a chain (compiler/task_chains.h) and the chain's next task follow each act.
    bool every_act = false;
  };

  bool IsSource() const;
  bool StartsInput(int64_t act) const;  // takes new input pieces (REPEAT: every repeat_count)
  bool EndsInput(int64_t act) const;    // returns them
  // Needs a free slot of `o` (an ACC's data output: every acc_count acts).
  bool StartsOutput(const Output& o, int64_t act) const;
  bool EndsOutput(const Output& o, int64_t act) const;      // announces the piece
  int64_t NeededPiece(const Input& in, int64_t act) const;  // -1 when the act needs none
  // An order register's pieces that must be made before `act` (0 for other registers).
  int64_t OrderNeeds(const Input& in, int64_t act) const;
  bool Ready(const Input& in, int64_t act) const;  // the act has what it needs of `in`
  bool NoMoreActs() const;
  void TryAct(Outbox& out);
  void StopActing(Outbox& out);
  void ReturnUnused(Input& in, int64_t piece, int32_t slot, Outbox& out);
  void ReturnLentInputs(Outbox& out);  // once no output slot is held
  void OnReady(const RegstReady& m);
  void OnFree(const RegstFree& m);
  void OnEord(const Eord& m);
  Input& FindInput(int64_t regst, const char* what);
  std::string TaskName(int64_t task) const;
  [[noreturn]] void Fail(const std::string& what) const;

  const plan::Plan& plan_;
  int64_t task_;
  int64_t source_pieces_;
  int64_t acts_ = 0;
  bool busy_ = false;
  plan::TaskKind kind_;
  int64_t rate_ = 1;          // acc_count of an ACC, repeat_count of a REPEAT
  bool lends_input_ = false;  // a REPEAT reading in place
  bool stopped_ = false;      // the last act is done and the Eords are sent
  // Keyed by register id so that every message goes out in a deterministic order; the task's
  // own register order (for Launch) is kept in the two lists.
  std::map<int64_t, Input> inputs_;
  std::map<int64_t, Output> outputs_;
  std::vector<int64_t> input_order_;
  std::vector<int64_t> output_order_;
};

}  // namespace twinflow::runtime
