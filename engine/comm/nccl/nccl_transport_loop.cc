// NcclTransport's thread: agreeing the order of operations with the other ranks, issuing them
// on their channels' streams, and completing them as their events pass (nccl_transport.h).
#include <algorithm>
#include <chrono>
#include <exception>
#include <set>

#include "engine/comm/nccl/nccl_check.h"
#include "engine/comm/nccl/nccl_transport.h"
#include "engine/core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace twinflow::comm {
namespace {

constexpr int kMessageTag = 1;

std::array<int64_t, 5> Encode(const SequencerMessage& m) {
  return {static_cast<int64_t>(m.kind), m.channel, m.key.what, m.key.order, m.key.piece};
}

SequencerMessage Decode(const std::array<int64_t, 5>& words, int to) {
  if (words[0] != static_cast<int64_t>(SequencerMessageKind::kReady) &&
      words[0] != static_cast<int64_t>(SequencerMessageKind::kGo)) {
    throw CommError("NCCL: a sequencer message of unknown kind " + std::to_string(words[0]));
  }
  return {static_cast<SequencerMessageKind>(words[0]), to, static_cast<int>(words[1]),
          OpKey{words[2], words[3], words[4]}};
}

std::string RankList(const std::vector<int>& ranks) {
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

}  // namespace

void NcclTransport::Loop() {
  bool failed = false;
  try {
    TF_CUDA_CHECK(cudaSetDevice(gpu_));
  } catch (...) {
    failed = true;
    fail_(std::current_exception());
  }
  while (true) {
    bool progressed = false;
    if (!failed) {
      try {
        progressed = Step();
      } catch (...) {
        failed = true;  // the run ends; End aborts the communicators
        fail_(std::current_exception());
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (stop_) {
      exited_ = true;
      wake_.notify_all();
      return;
    }
    if (!progressed) {
      const auto wait = failed ? std::chrono::microseconds(50000) : std::chrono::microseconds(50);
      wake_.wait_for(lock, wait, [this] { return stop_ || !fresh_.empty(); });
    }
  }
}

bool NcclTransport::Step() {
  std::vector<Request> fresh;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fresh.swap(fresh_);
  }
  bool progressed = !fresh.empty();
  for (Request& r : fresh) {
    const int channel = r.channel;
    const OpKey key = r.key;
    waiting_.emplace(std::make_pair(channel, key), std::move(r));
    Deliver(sequencer_.Ready(channel, key));
  }
  progressed |= ReceiveMessages();
  progressed |= IssueGone();
  progressed |= PollInFlight();
  CheckAsyncErrors();
  while (!outgoing_.empty()) {
    int done = 0;
    CheckMpi(MPI_Test(&outgoing_.front()->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) break;
    outgoing_.pop_front();
  }
  if (progressed) RefreshReport();
  return progressed;
}

void NcclTransport::Deliver(std::vector<SequencerMessage> messages) {
  for (size_t next = 0; next < messages.size(); ++next) {  // in order; more may be appended
    const SequencerMessage m = messages[next];
    if (m.to == rank_) {
      std::vector<SequencerMessage> more = sequencer_.Receive(m, rank_);
      messages.insert(messages.end(), more.begin(), more.end());
      continue;
    }
    auto out = std::make_unique<Outgoing>();
    out->words = Encode(m);
    CheckMpi(
        MPI_Isend(out->words.data(), 5, MPI_INT64_T, m.to, kMessageTag, messages_, &out->request),
        "MPI_Isend (NCCL sequencer)");
    outgoing_.push_back(std::move(out));
  }
}

bool NcclTransport::ReceiveMessages() {
  bool any = false;
  while (true) {
    int flag = 0;
    MPI_Status status;
    CheckMpi(MPI_Iprobe(MPI_ANY_SOURCE, kMessageTag, messages_, &flag, &status), "MPI_Iprobe");
    if (!flag) return any;
    std::array<int64_t, 5> words{};
    CheckMpi(MPI_Recv(words.data(), 5, MPI_INT64_T, status.MPI_SOURCE, kMessageTag, messages_,
                      MPI_STATUS_IGNORE),
             "MPI_Recv (NCCL sequencer)");
    Deliver(sequencer_.Receive(Decode(words, rank_), status.MPI_SOURCE));
    any = true;
  }
}

bool NcclTransport::IssueGone() {
  const std::vector<std::pair<int, OpKey>> gone = sequencer_.TakeIssuable();
  for (const auto& [channel, key] : gone) {
    const auto it = waiting_.find({channel, key});
    if (it == waiting_.end()) throw CommError("NCCL: a go for an operation never handed over");
    Request& r = it->second;
    ChannelStream& stream = *streams_.at(static_cast<size_t>(channel));
    try {
      r.work(stream);
      const cudaEvent_t event = TakeEvent();
      TF_CUDA_CHECK(cudaEventRecord(event, stream.stream));
      in_flight_.push_back({event, std::move(r.done), r.what, channel});
    } catch (const Error& e) {
      RethrowPrefixed(e, r.what + ": ");
    }
    waiting_.erase(it);
  }
  return !gone.empty();
}

bool NcclTransport::PollInFlight() {
  bool any = false;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    const cudaError_t state = cudaEventQuery(it->event);
    if (state == cudaErrorNotReady) {
      cudaGetLastError();  // NotReady is recorded as the thread's last error too: the next
                           // launch check (a packing kernel's) must not see it
      ++it;
      continue;
    }
    if (state != cudaSuccess) {
      throw CommError("NCCL: " + it->what + " on rank " + std::to_string(rank_) +
                      ": the GPU reported " + cudaGetErrorString(state));
    }
    events_.push_back(it->event);
    const Done done = std::move(it->done);
    it = in_flight_.erase(it);
    done();
    any = true;
  }
  return any;
}

void NcclTransport::CheckAsyncErrors() {
  std::set<int> busy;
  for (const InFlight& f : in_flight_) busy.insert(f.channel);
  for (int channel : busy) {
    ncclResult_t state = ncclSuccess;
    ChannelStream& stream = *streams_.at(static_cast<size_t>(channel));
    CheckNccl(ncclCommGetAsyncError(stream.comm, &state), "ncclCommGetAsyncError", rank_);
    CheckNccl(state,
              "an operation of the channel of ranks " +
                  RankList(channels_.channels[static_cast<size_t>(channel)].ranks),
              rank_);
  }
}

cudaEvent_t NcclTransport::TakeEvent() {
  if (!events_.empty()) {
    const cudaEvent_t e = events_.back();
    events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  TF_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void NcclTransport::RefreshReport() {
  std::vector<std::string> lines;
  std::set<int> awaited;
  for (const auto& [at, request] : waiting_) {
    if (sequencer_.sequencer() != rank_) {
      lines.push_back("NCCL: " + request.what + " waits for the go of rank " +
                      std::to_string(sequencer_.sequencer()) + ", which orders the operations");
      continue;
    }
    const std::vector<int> missing = sequencer_.Awaited(at.first, at.second);
    awaited.insert(missing.begin(), missing.end());
    lines.push_back("NCCL: " + request.what + " waits for rank(s) " + RankList(missing) +
                    " to reach it");
  }
  for (const InFlight& f : in_flight_) lines.push_back("NCCL: " + f.what + " running on the GPU");
  std::lock_guard<std::mutex> lock(mutex_);
  report_ = std::move(lines);
  awaited_.assign(awaited.begin(), awaited.end());
}

}  // namespace twinflow::comm
