#pragma once
// MpiTransport: the runtime's Transport (engine/runtime/transport.h) over MPI, for one rank of
// a multi-process run.
//
// One comm thread per rank owns every MPI call during a run: device threads hand it operations
// and return at once; it starts them non-blocking and polls them with MPI_Test, then calls the
// operation's completion (which posts the act's Done to the device's queue).
//
// Point to point: a SEND's payload goes to its peer's rank on MPI_COMM_WORLD with tag
// task.tag * 8 + piece % 8. A SEND or RECV actor has one act in flight at a time, so the tag
// is unique among the messages in flight between two ranks, and MPI keeps messages of one tag
// in order.
//
// Collectives whose group spans ranks: each rank's members first meet in-process; then one MPI
// call per rank. Every collective of the Plan (its group and issue order) gets its own
// communicator, made at construction in the same order on every rank; its pieces then come in
// piece order on every rank, so two collectives can never be matched with each other or cross.
// (One communicator per group would need one global order of all collectives of the group,
// which the actors do not follow: independent collectives run as their inputs arrive.)
//   - all_reduce with one member per rank, of f32, f64, i32 or i64: of 1 MiB or more on two
//     ranks, or in place on more, the chunked chain of point-to-point messages
//     (chain_all_reduce.h); otherwise MPI_Iallreduce (an in-place one from a copy of the input).
//   - all_gather with one member per rank: MPI_Iallgatherv, unpacked along the gather axis.
//   - reduce_scatter with one member per rank, of those types: MPI_Ireduce_scatter.
//   - all_to_all with one member per rank: MPI_Ialltoallv of the input cut along the scatter
//     axis, joined along the gather axis (each rank sends each other rank only its chunk).
//   - everything else: MPI_Iallgatherv of the members' inputs, then every rank computes its
//     members' outputs with the reference collectives, in member order (bit-identical to the
//     in-process path).
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/comm/mpi_session.h"
#include "engine/core/reduce_op.h"
#include "engine/runtime/transport.h"

namespace twinflow::comm {

// Lifetime: keeps `plan` (and the communicators built from it) by reference: the Plan must
// outlive the transport, and the transport the executor that uses it.
class MpiTransport : public runtime::Transport {
 public:
  // Collective over MPI_COMM_WORLD: every rank builds it from the same Plan at the same point.
  MpiTransport(const plan::Plan& plan, const MpiSession& session);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  void Begin(Fail fail) override;
  void End() override;
  void Send(const plan::Task& send, int64_t piece, std::vector<std::byte> payload,
            Done done) override;
  void Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) override;
  bool TakesBucket(const plan::Task& task) const override;
  void Collective(const plan::Task& task, int64_t piece,
                  std::vector<runtime::CollectiveMember> local, Done done) override;
  runtime::SinkValues ExchangeSinks(const plan::Plan& plan,
                                    const runtime::SinkValues& local) override;
  std::vector<std::vector<std::byte>> Allgather(const std::vector<std::byte>& bytes) override;
  std::vector<std::string> Pending() const override;
  std::vector<int> Unresponsive(double seconds) override;

  static constexpr int64_t kPieceWindow = 8;

 private:
  // One non-blocking MPI operation: `start` issues it, `finish` runs on the comm thread once it
  // completed (with its status). One of several requests (ChainAllReduce) has `poll` instead,
  // which advances it and says whether it completed.
  struct Op {
    std::function<void(MPI_Request*)> start;
    std::function<void(const MPI_Status&)> finish;
    std::function<bool()> poll;
    MPI_Request request = MPI_REQUEST_NULL;
    int64_t id = -1;  // set by Enqueue: its line in in_flight_
  };
  // The communicator of one collective spanning ranks, and who is where in it.
  struct CollectiveComm {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<const plan::Task*> members;      // by member index
    std::vector<std::vector<int>> by_comm_rank;  // member indices of each rank, in order
    bool one_member_per_rank = false;
    // ChainAllReduce's chunks, kept between pieces (a collective has one piece in flight).
    std::shared_ptr<std::vector<std::byte>> scratch = std::make_shared<std::vector<std::byte>>();
  };

  // A collective piece's members on this rank, shared by its operation's start and finish.
  using Members = std::shared_ptr<std::vector<runtime::CollectiveMember>>;

  void Enqueue(std::string what, Op op);
  // The MPI operation of one collective piece, one a path (see the file comment). The first
  // four need one member per rank; the last serves every collective.
  static Op AllReduceOp(const Members& members, ReduceOp op, MPI_Comm comm, Done done);
  static Op ChainAllReduceOp(const Members& members, ReduceOp op, const CollectiveComm& c,
                             Done done);
  Op AllGatherOp(const plan::Task& task, const CollectiveComm& c, const Members& members,
                 Done done) const;
  Op ReduceScatterOp(const plan::Task& task, const CollectiveComm& c, const Members& members,
                     ReduceOp op, Done done) const;
  Op AllToAllOp(const plan::Task& task, const CollectiveComm& c, const Members& members,
                Done done) const;
  Op GatherAndComputeOp(const plan::Task& task, const CollectiveComm& c, const Members& members,
                        ReduceOp op, Done done) const;
  // The comm thread's side of Unresponsive: a probe in progress.
  struct Probe {
    bool active = false;
    std::chrono::steady_clock::time_point deadline;
    std::set<int> answered;
    std::chrono::steady_clock::time_point served;  // when pings were last looked for
  };
  void Loop();
  // Answers other ranks' pings, takes pongs, and starts or ends this rank's probe.
  void ServeProbes(Probe& probe);
  int Tag(const plan::Task& task, int64_t piece) const;
  int PeerRank(const plan::Task& task) const;

  const plan::Plan& plan_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int64_t tag_limit_ = 0;
  std::map<std::pair<int64_t, int64_t>, CollectiveComm> comms_;  // (group, issue order)

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Op> pending_;
  std::map<int64_t, std::string> in_flight_;  // started and not completed, by op id
  int64_t next_op_ = 0;
  bool stop_ = false;
  // Unresponsive's request and answer, under mutex_.
  double probe_seconds_ = 0;
  bool probe_wanted_ = false;
  bool probe_done_ = false;
  std::vector<int> probe_result_;
  std::condition_variable probe_changed_;
  Fail fail_;
  std::thread thread_;
};

}  // namespace twinflow::comm
