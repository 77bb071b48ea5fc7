#pragma once
// Transport: how the ThreadedExecutor of one rank reaches the other ranks of a multi-process
// run. engine/comm implements it over MPI; the runtime only sees this interface, so it does not
// depend on MPI (the original design notes' layering: runtime depends on plan and core).
// Without a transport the executor runs a Plan whose devices are all on one rank.
//
// Threads: Send, Recv and Collective are called from device threads and return at once; the
// transport completes them on its own (comm) thread and then calls `done`, or `fail` with the
// error. Begin and End bracket a run; ExchangeSinks and Allgather run between runs, on the
// calling thread, and are collective: every rank calls them in the same order.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/core/region.h"
#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/rendezvous.h"

namespace twinflow::runtime {

// What a SEND moves: region `from` of its input slot, packed as region `to` of a tensor of
// `shape` and `dtype` (the PreparedTask's send_shape and copy).
struct SendBox {
  Region from;
  Shape shape;
  DType dtype = DType::kF32;
  Region to;
};

// Values SINK tasks handed to the host: [regst][piece].
using SinkValues = std::map<int64_t, std::map<int64_t, Tensor>>;

class Transport {
 public:
  using Done = std::function<void()>;
  using Fail = std::function<void(std::exception_ptr)>;
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks of its node: which of the node's GPUs it takes.
  virtual int local_rank() const { return 0; }
  // Whether Send, Recv and Collective take device memory as it is (NCCL). When not, an
  // asynchronous device's acts go through host buffers (host_staging.h).
  virtual bool reads_device_memory() const { return false; }
  // Whether Collective takes this gradient bucket (several tensors per member, plan.proto's
  // CollectiveDesc) as it is; when not, each member packs it into one host buffer first and
  // unpacks the result on arrival (host_staging.h). NCCL takes every bucket.
  virtual bool TakesBucket(const plan::Task& task) const { return reads_device_memory(); }

  virtual void Begin(Fail fail) = 0;
  virtual void End() = 0;

  // A SEND act: `payload` (the packed box of its transfer, in host memory) goes to the peer's
  // rank, matched by the task's tag and the piece.
  virtual void Send(const plan::Task& send, int64_t piece, std::vector<std::byte> payload,
                    Done done) = 0;
  // A SEND act where the transport reads device memory: it packs `box` of `slot` (a view of
  // the SEND's input slot) on the device itself, and sends that. PlanError where it does not.
  virtual void SendFromDevice(const plan::Task& send, int64_t piece, Tensor slot,
                              const SendBox& box, Done done);
  // A RECV act: the peer's payload for this piece lands in `slot` (the output register's slot).
  virtual void Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) = 0;
  // A collective whose group spans ranks: `local` are this rank's members (in member order),
  // all arrived; `done` once every local output is written.
  virtual void Collective(const plan::Task& task, int64_t piece,
                          std::vector<CollectiveMember> local, Done done) = 0;

  // Every rank's sink values, merged, on every rank.
  virtual SinkValues ExchangeSinks(const plan::Plan& plan, const SinkValues& local) = 0;
  // Every rank's `bytes`, in rank order, on every rank.
  virtual std::vector<std::vector<std::byte>> Allgather(const std::vector<std::byte>& bytes) = 0;

  // The operations of the last run that had not completed when it ended, one line each
  // (e.g. "MPI: task 'x/recv@1' piece 3 receiving 4096 bytes from rank 0"), for stall reports.
  virtual std::vector<std::string> Pending() const = 0;
  // After the watchdog caught a stall, during the run: the other ranks that do not answer a
  // liveness probe within `seconds` (stopped, hung or gone), so the report names the culprit.
  // Called from the watcher thread; the transport's own thread does the probing. None here.
  virtual std::vector<int> Unresponsive(double seconds) {
    (void)seconds;
    return {};
  }
};

}  // namespace twinflow::runtime
