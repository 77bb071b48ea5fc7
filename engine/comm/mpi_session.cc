#include "engine/comm/mpi_session.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/comm/deadline_guard.h"
#include "engine/core/error.h"

namespace twinflow::comm {

namespace {

// "10", "1.5": seconds as messages print them.
std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

}  // namespace

bool MpiSession::LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

MpiSession::MpiSession(const std::string& program, double start_seconds) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const DeadlineGuard guard(start_seconds,
                            program + ": error: rank " + (rank ? rank : "?") +
                                ": MPI did not start within " + Seconds(start_seconds) +
                                " s: a process of this job did not start MPI (every rank must run "
                                "the same twinflow command; or one was stopped or died)");
  // Open MPI's non-blocking all-reduce picks its algorithm by message size, and for the
  // megabytes of gradients training moves its default is about half as fast as the ring
  // (bench/mpi_bench.sh measures both). A user's own setting wins (setenv does not overwrite).
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
  int provided = 0;
  CheckMpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw CommError("MPI offers thread level " + std::to_string(provided) +
                    "; twinflow's comm thread needs MPI_THREAD_SERIALIZED");
  }
  CheckMpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  CheckMpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  CheckMpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
           "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::Abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
}

void CheckMpi(int code, const std::string& call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommError(call + ": " + std::string(text, static_cast<size_t>(length)));
}

std::vector<std::vector<std::byte>> AllgatherBytes(const std::vector<std::byte>& bytes) {
  int size = 1;
  CheckMpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const int mine = static_cast<int>(bytes.size());
  std::vector<int> counts(static_cast<size_t>(size));
  CheckMpi(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD),
           "MPI_Allgather");
  std::vector<int> displs(counts.size(), 0);
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<std::byte> all(static_cast<size_t>(total));
  CheckMpi(MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), counts.data(), displs.data(),
                          MPI_BYTE, MPI_COMM_WORLD),
           "MPI_Allgatherv");
  std::vector<std::vector<std::byte>> result;
  for (size_t r = 0; r < counts.size(); ++r) {
    result.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
  }
  return result;
}

std::vector<std::string> AllgatherText(const std::string& text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  std::vector<std::string> all;
  for (const std::vector<std::byte>& bytes : AllgatherBytes({data, data + text.size()})) {
    all.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return all;
}

namespace {

// Tags the startup agreement's messages: they are all received before a run's first message,
// and MPI guarantees tags up to 32767.
constexpr int kStartupTag = 32767;

std::string Received(int source) {
  MPI_Status status{};
  CheckMpi(MPI_Probe(source, kStartupTag, MPI_COMM_WORLD, &status), "MPI_Probe");
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<size_t>(count), '\0');
  CheckMpi(MPI_Recv(text.data(), count, MPI_CHAR, source, kStartupTag, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE),
           "MPI_Recv");
  return text;
}

void SendText(const std::string& text, int dest) {
  CheckMpi(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, dest, kStartupTag,
                    MPI_COMM_WORLD),
           "MPI_Send");
}

// Polls for a startup message from `source` until `deadline`; false when none came.
bool Arrived(int source, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    int flag = 0;
    CheckMpi(MPI_Iprobe(source, kStartupTag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE),
             "MPI_Iprobe");
    if (flag) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// "0 <text of rank 0>\n..." becomes, and comes from, one message: lengths, then the texts.
std::string Pack(const std::vector<std::string>& texts) {
  std::string packed;
  for (const std::string& t : texts) packed += std::to_string(t.size()) + ":" + t;
  return packed;
}

std::vector<std::string> Unpack(const std::string& packed) {
  std::vector<std::string> texts;
  size_t at = 0;
  while (at < packed.size()) {
    const size_t colon = packed.find(':', at);
    if (colon == std::string::npos) throw CommError("startup agreement: a garbled reply");
    const size_t length = std::stoul(packed.substr(at, colon - at));
    texts.push_back(packed.substr(colon + 1, length));
    at = colon + 1 + length;
  }
  return texts;
}

}  // namespace

std::vector<std::string> GatherAtStartup(const std::string& text, double seconds) {
  int rank = 0, size = 1;
  CheckMpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  CheckMpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const auto start = std::chrono::steady_clock::now();
  if (rank != 0) {
    SendText(text, 0);  // small: returns at once (eager), whatever rank 0 does
    const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(1.5 * seconds));
    if (!Arrived(0, deadline)) {
      throw TimeoutError("rank " + std::to_string(rank) +
                         ": rank 0 did not answer the startup "
                         "agreement within " +
                         Seconds(1.5 * seconds) +
                         " s (stopped, hung, or "
                         "running another command)");
    }
    const std::string reply = Received(0);
    if (reply.rfind("timeout ", 0) == 0) throw TimeoutError(reply.substr(8));
    return Unpack(reply);
  }
  std::vector<std::string> texts(static_cast<size_t>(size));
  texts[0] = text;
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(seconds));
  std::string missing;
  for (int r = 1; r < size; ++r) {
    if (Arrived(r, deadline)) {
      texts[static_cast<size_t>(r)] = Received(r);
    } else {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  if (!missing.empty()) {
    const std::string message = (missing.find(',') == std::string::npos ? "rank " : "ranks ") +
                                missing + " did not join the startup agreement within " +
                                Seconds(seconds) + " s (stopped, hung, or running another command)";
    for (int r = 1; r < size; ++r) {
      if (!texts[static_cast<size_t>(r)].empty()) SendText("timeout " + message, r);
    }
    throw TimeoutError(message);
  }
  const std::string packed = Pack(texts);
  for (int r = 1; r < size; ++r) SendText(packed, r);
  return texts;
}

}  // namespace twinflow::comm
