// MpiTransport's liveness probe (Transport::Unresponsive): after a stall, a one-byte ping to
// every other rank over the comm thread, and the ranks whose pong did not come back in time.
// Every comm thread answers pings as it polls (ServeProbes, called from Loop in
// mpi_transport.cc).
#include <mpi.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "engine/comm/mpi_transport.h"

namespace twinflow::comm {

std::vector<int> MpiTransport::Unresponsive(double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_ || !thread_.joinable() || size_ < 2) return {};
  probe_seconds_ = seconds;
  probe_wanted_ = true;
  probe_done_ = false;
  wake_.notify_all();
  const auto limit = std::chrono::duration<double>(seconds + 5);
  if (!probe_changed_.wait_for(lock, limit, [this] { return probe_done_; })) return {};
  return probe_result_;
}

void MpiTransport::ServeProbes(Probe& probe) {
  // Off the hot path: the comm loop spins while operations are in flight, and answering
  // within milliseconds is all a 2-second probe needs.
  const auto now = std::chrono::steady_clock::now();
  if (now - probe.served < std::chrono::milliseconds(5)) return;
  probe.served = now;
  const int ping = static_cast<int>(tag_limit_);
  const int pong = ping - 1;
  for (int tag : {ping, pong}) {
    while (true) {
      int flag = 0;
      MPI_Status status{};
      CheckMpi(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
      if (!flag) break;
      char byte = 0;
      CheckMpi(
          MPI_Recv(&byte, 1, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
      if (tag == pong) probe.answered.insert(status.MPI_SOURCE);
      // One byte goes out eagerly: this returns at once even toward a stopped rank.
      if (tag == ping) {
        CheckMpi(MPI_Send(&byte, 1, MPI_CHAR, status.MPI_SOURCE, pong, MPI_COMM_WORLD), "MPI_Send");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (probe_wanted_ && !probe.active) {
    probe.active = true;
    probe.answered.clear();
    probe.deadline = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(probe_seconds_));
    const char byte = 0;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) {
        CheckMpi(MPI_Send(&byte, 1, MPI_CHAR, r, ping, MPI_COMM_WORLD), "MPI_Send");
      }
    }
  } else if (probe.active && now >= probe.deadline) {
    probe_result_.clear();
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && !probe.answered.count(r)) probe_result_.push_back(r);
    }
    probe.active = false;
    probe_wanted_ = false;
    probe_done_ = true;
    probe_changed_.notify_all();
  }
}

}  // namespace twinflow::comm
