#pragma once
// NcclTransport: the runtime's Transport (engine/runtime/transport.h) between cuda devices of
// different ranks, one GPU per rank, over NCCL: collectives and SEND/RECV read and write the
// slots in device memory (no host staging).
//
// Construction is collective over MPI_COMM_WORLD: rank 0's ncclUniqueId goes out by MPI_Bcast,
// every rank joins the world communicator on its GPU, and each channel (nccl_channels.h: a
// group spanning ranks, or a SEND/RECV pair) is split from it with its own stream.
//
// During a run one transport thread owns every NCCL, CUDA-stream and MPI call: device threads
// hand it operations and return. An operation's inputs are complete when its act starts (the
// runtime completes an act only once its device work ran), so nothing waits on the compute
// stream; channels' streams run beside it. Operations are issued in the order the channel's
// members agree (op_sequencer.h; its messages go over a duplicate of MPI_COMM_WORLD), and an
// operation completes when an event recorded after it on the channel's stream has passed.
//
// Errors: every NCCL call is checked, and NCCL's asynchronous errors are polled while
// operations are in flight; either fails the run with the call, the rank and NCCL's message.
// A run that ends with operations outstanding (a failure, or a stall the watchdog caught)
// aborts every communicator (ncclCommAbort), so no rank stays stuck in a kernel; the transport
// then refuses further runs. Stall reports name the ranks an operation still waits for.
//
// Built with NCCL only (TWINFLOW_HAVE_NCCL); built, not verified on a GPU.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/comm/mpi_session.h"
#include "engine/comm/nccl/nccl_launch.h"
#include "engine/comm/nccl_channels.h"
#include "engine/comm/op_sequencer.h"
#include "engine/runtime/transport.h"

namespace twinflow::comm {

// Lifetime: keeps `plan` by reference; the Plan must outlive the transport, and the transport
// the executor that uses it.
class NcclTransport : public runtime::Transport {
 public:
  // `gpu`: this rank's GPU (the one its cuda device uses).
  NcclTransport(const plan::Plan& plan, const MpiSession& session, int gpu);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  bool reads_device_memory() const override { return true; }
  void Begin(Fail fail) override;
  void End() override;
  void Send(const plan::Task& send, int64_t piece, std::vector<std::byte> payload,
            Done done) override;
  void SendFromDevice(const plan::Task& send, int64_t piece, Tensor slot,
                      const runtime::SendBox& box, Done done) override;
  void Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) override;
  void Collective(const plan::Task& task, int64_t piece,
                  std::vector<runtime::CollectiveMember> local, Done done) override;
  runtime::SinkValues ExchangeSinks(const plan::Plan& plan,
                                    const runtime::SinkValues& local) override;
  std::vector<std::vector<std::byte>> Allgather(const std::vector<std::byte>& bytes) override;
  std::vector<std::string> Pending() const override;
  std::vector<int> Unresponsive(double seconds) override;

 private:
  // An operation handed over by a device thread.
  struct Request {
    int channel = 0;
    OpKey key;
    NcclWork work;
    Done done;
    std::string what;  // "all_reduce 'x@1' piece 3", for errors and stall reports
  };
  struct InFlight {
    cudaEvent_t event = nullptr;
    Done done;
    std::string what;
    int channel = 0;
  };
  // A sequencer message on its way to another rank (its buffer lives until the send is done).
  struct Outgoing {
    std::array<int64_t, 5> words{};
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void Submit(Request request);
  void Loop();
  bool Step();  // one round of the loop; whether anything happened
  void Deliver(std::vector<SequencerMessage> messages);
  bool ReceiveMessages();
  bool IssueGone();
  bool PollInFlight();
  void CheckAsyncErrors();
  void Abort();
  bool AwaitExit();
  cudaEvent_t TakeEvent();
  void RefreshReport();  // Pending()'s lines and the awaited ranks, from the thread's state
  int PeerCommRank(const plan::Task& task) const;

  const plan::Plan& plan_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int gpu_ = 0;
  ChannelPlan channels_;
  std::map<std::pair<int64_t, int64_t>, std::vector<const plan::Task*>> members_;  // collectives
  ncclComm_t world_ = nullptr;
  std::vector<std::unique_ptr<ChannelStream>> streams_;  // by channel; null where not a member
  MPI_Comm messages_ = MPI_COMM_NULL;  // the sequencer's, a duplicate of MPI_COMM_WORLD
  bool aborted_ = false;

  // The transport thread's state.
  OpSequencer sequencer_;
  std::map<std::pair<int, OpKey>, Request> waiting_;  // ready here, not yet issued
  std::deque<InFlight> in_flight_;
  std::deque<std::unique_ptr<Outgoing>> outgoing_;
  std::vector<cudaEvent_t> events_;  // free events

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Request> fresh_;
  std::vector<std::string> report_;  // Pending()'s lines, refreshed by the thread
  std::vector<int> awaited_;         // ranks the waiting operations wait for
  bool stop_ = false;
  bool exited_ = false;  // the thread left its loop (End waits for it, on wake_)
  Fail fail_;
  std::thread thread_;
};

}  // namespace twinflow::comm
