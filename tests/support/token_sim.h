#pragma once
// A token-level oracle for executor tests and for RandomPlan's slot sizing: plays the register
// protocol of engine/runtime/actor.h with every act finishing at once, counting only pieces
// announced, slots taken and pieces returned per consumer.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::testing {

// Plays the register protocol of engine/runtime/actor.h on a valid `plan` for `steps` steps,
// every act finishing at once and each task acting as soon as it can, SOURCE/VARIABLE tasks
// acting SourcePieces times (tests/support/random_plan.h). Returns "" when every task finishes,
// else which tasks are stuck and on what. An enabled act stays enabled until it runs, so if
// this schedule deadlocks, every schedule does (and if it finishes, every schedule does).
// RandomPlan raises slot counts where this finds them too small, so its Plans never deadlock.
std::string SimulateTokens(const plan::Plan& plan, int64_t steps);

// The simulation behind SimulateTokens, exposed so that RandomPlan can ask which registers
// ran out of slots.
// Lifetime: keeps `plan` by reference; it must outlive the simulation.
class TokenSim {
 public:
  TokenSim(const plan::Plan& plan, int64_t steps);

  // Every task acts whenever it can; true when all of them did all their acts.
  bool Run();
  // Registers whose lack of a free slot is all that stops their producer.
  std::vector<int64_t> FullOutputs() const;
  // Which tasks are stuck, at which act, and on which registers.
  std::string Report() const;

 private:
  int64_t Count(int64_t t) const;
  std::vector<int64_t> TopologicalOrder() const;
  int64_t ConsumerIndex(int64_t r, int64_t t) const;
  int64_t InUse(int64_t r) const;
  // The piece of `r` act `p` of `t` reads (negative: none).
  int64_t Needed(int64_t t, int64_t r, int64_t p) const;
  bool InputsReady(int64_t t, std::vector<int64_t>* missing) const;
  bool NeedsSlot(int64_t t) const;
  bool OutputsFree(int64_t t, std::vector<int64_t>* full) const;
  void Act(int64_t t);

  const plan::Plan& plan_;
  std::vector<int64_t> total_, acts_, produced_, acquired_;
  std::vector<std::vector<int64_t>> freed_;
};

}  // namespace twinflow::testing
