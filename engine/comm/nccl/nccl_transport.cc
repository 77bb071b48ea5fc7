#include "engine/comm/nccl/nccl_transport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>

#include "engine/comm/nccl/nccl_bootstrap.h"
#include "engine/comm/nccl/nccl_check.h"
#include "engine/comm/sink_exchange.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "kernels/cuda/cuda_check.h"

namespace twinflow::comm {
namespace {

std::vector<std::vector<int>> ChannelRanks(const ChannelPlan& channels) {
  std::vector<std::vector<int>> ranks;
  for (const Channel& c : channels.channels) ranks.push_back(c.ranks);
  return ranks;
}

// Runs fn with `gpu` current on this thread, then restores the thread's GPU.
template <typename Fn>
void OnGpu(int gpu, Fn&& fn) {
  int previous = 0;
  TF_CUDA_CHECK(cudaGetDevice(&previous));
  TF_CUDA_CHECK(cudaSetDevice(gpu));
  try {
    fn();
  } catch (...) {
    cudaSetDevice(previous);
    throw;
  }
  TF_CUDA_CHECK(cudaSetDevice(previous));
}

std::string Describe(const plan::Task& task, int64_t piece) {
  return "task '" + task.name() + "' piece " + std::to_string(piece);
}

}  // namespace

NcclTransport::NcclTransport(const plan::Plan& plan, const MpiSession& session, int gpu)
    : plan_(plan),
      rank_(session.rank()),
      size_(session.size()),
      local_rank_(session.local_rank()),
      gpu_(gpu),
      channels_(PlanChannels(plan)),
      sequencer_(rank_, ChannelRanks(channels_)) {
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::COLLECTIVE) continue;
    std::vector<const plan::Task*>& members = members_[{t.collective().group(), t.issue_order()}];
    const int size = plan.groups(static_cast<int>(t.collective().group())).devices_size();
    members.resize(static_cast<size_t>(size), nullptr);
    members.at(static_cast<size_t>(t.collective().member())) = &t;
  }
  OnGpu(gpu_, [&] {
    world_ = InitWorld(BroadcastUniqueId(rank_), rank_, size_);
    const std::vector<ncclComm_t> comms = SplitChannels(world_, channels_, rank_);
    streams_.resize(comms.size());
    for (size_t c = 0; c < comms.size(); ++c) {
      if (comms[c] == nullptr) continue;
      const std::vector<int>& ranks = channels_.channels[c].ranks;
      auto stream = std::make_unique<ChannelStream>();
      stream->comm = comms[c];
      stream->comm_rank =
          static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
      stream->size = static_cast<int>(ranks.size());
      stream->rank = rank_;
      TF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream->stream, cudaStreamNonBlocking));
      streams_[c] = std::move(stream);
    }
  });
  CheckMpi(MPI_Comm_dup(MPI_COMM_WORLD, &messages_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(messages_, MPI_ERRORS_RETURN);
}

NcclTransport::~NcclTransport() {
  End();
  cudaSetDevice(gpu_);
  for (std::unique_ptr<ChannelStream>& s : streams_) {
    if (!s) continue;
    if (!aborted_) {
      cudaStreamSynchronize(s->stream);
      ncclCommDestroy(s->comm);
    }
    const cudaStream_t stream = s->stream;
    s.reset();  // its scratch, before its stream
    cudaStreamDestroy(stream);
  }
  if (!aborted_ && world_ != nullptr) ncclCommDestroy(world_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (messages_ != MPI_COMM_NULL) MPI_Comm_free(&messages_);
}

void NcclTransport::Begin(Fail fail) {
  End();
  if (aborted_) {
    throw CommError("NCCL: the communicators of rank " + std::to_string(rank_) +
                    " were aborted when an earlier run failed; start the job again");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stop_ = false;
  exited_ = false;
  fail_ = std::move(fail);
  thread_ = std::thread([this] { Loop(); });
}

void NcclTransport::End() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  if (!AwaitExit()) {
    // The thread is stuck inside an NCCL call (a peer that never issues its side): aborting
    // the communicators returns it an error. If even that does not free it, only ending the
    // job does: a run may not hang.
    Abort();
    if (!AwaitExit()) {
      std::fprintf(stderr,
                   "twinflow: NCCL: rank %d's transport thread is stuck inside NCCL even after "
                   "ncclCommAbort; ending the job\n",
                   rank_);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  thread_.join();
  const bool outstanding = !in_flight_.empty() || !waiting_.empty() || !fresh_.empty();
  if (outstanding) {
    Abort();  // a failed or stalled run: no rank may stay inside a kernel
  } else {
    for (std::unique_ptr<Outgoing>& o : outgoing_) MPI_Wait(&o->request, MPI_STATUS_IGNORE);
  }
  for (std::unique_ptr<Outgoing>& o : outgoing_) {
    if (o->request != MPI_REQUEST_NULL) MPI_Request_free(&o->request);
  }
  outgoing_.clear();
  in_flight_.clear();
  waiting_.clear();
  fresh_.clear();
}

// Whether the thread left its loop within the grace time a finishing run needs.
bool NcclTransport::AwaitExit() {
  std::unique_lock<std::mutex> lock(mutex_);
  return wake_.wait_for(lock, std::chrono::seconds(10), [this] { return exited_; });
}

void NcclTransport::Abort() {
  if (aborted_) return;  // each communicator is aborted once
  for (std::unique_ptr<ChannelStream>& s : streams_) {
    if (s) ncclCommAbort(s->comm);
  }
  if (world_ != nullptr) ncclCommAbort(world_);
  aborted_ = true;
}

void NcclTransport::Submit(Request request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fresh_.push_back(std::move(request));
  }
  wake_.notify_all();
}

int NcclTransport::PeerCommRank(const plan::Task& task) const {
  const std::vector<int>& ranks =
      channels_.channels.at(static_cast<size_t>(channels_.ChannelOf(plan_, task))).ranks;
  const int peer = plan_.devices(task.peer()).rank();
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), peer) - ranks.begin());
}

void NcclTransport::Send(const plan::Task& send, int64_t, std::vector<std::byte>, Done) {
  throw PlanError("task '" + send.name() + "': the NCCL transport sends from device memory");
}

void NcclTransport::SendFromDevice(const plan::Task& send, int64_t piece, Tensor slot,
                                   const runtime::SendBox& box, Done done) {
  Submit({channels_.ChannelOf(plan_, send), OpKey{-1 - send.tag(), 0, piece},
          SendWork(PeerCommRank(send), std::move(slot), box), std::move(done),
          "SEND " + Describe(send, piece)});
}

void NcclTransport::Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) {
  Submit({channels_.ChannelOf(plan_, recv), OpKey{-1 - recv.tag(), 0, piece},
          RecvWork(PeerCommRank(recv), std::move(slot)), std::move(done),
          "RECV " + Describe(recv, piece)});
}

void NcclTransport::Collective(const plan::Task& task, int64_t piece,
                               std::vector<runtime::CollectiveMember> local, Done done) {
  if (local.size() != 1) {
    throw PlanError(Describe(task, piece) + ": the NCCL transport takes one member per rank, " +
                    "this rank has " + std::to_string(local.size()));
  }
  const plan::CollectiveDesc& desc = task.collective();
  const ReduceOp op = plan::FromProto(desc.reduce_op(), task.name()).value_or(ReduceOp::kSum);
  runtime::CollectiveMember& m = local.front();
  NcclWork work = CollectiveWork(plan_, members_.at({desc.group(), task.issue_order()}), task, op,
                                 std::move(m.tensors));
  Submit({channels_.ChannelOf(plan_, task), OpKey{desc.group(), task.issue_order(), piece},
          std::move(work), std::move(done),
          std::string(CollectiveKindName(plan::FromProto(desc.kind(), task.name()))) + " " +
              Describe(task, piece)});
}

runtime::SinkValues NcclTransport::ExchangeSinks(const plan::Plan& plan,
                                                 const runtime::SinkValues& local) {
  return ExchangeSinkValues(plan, local);
}

std::vector<std::vector<std::byte>> NcclTransport::Allgather(const std::vector<std::byte>& bytes) {
  return AllgatherBytes(bytes);
}

std::vector<std::string> NcclTransport::Pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return report_;
}

std::vector<int> NcclTransport::Unresponsive(double) {
  std::lock_guard<std::mutex> lock(mutex_);
  return awaited_;
}

}  // namespace twinflow::comm
