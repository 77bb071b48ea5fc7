#pragma once
// MpiSession: MPI for the lifetime of a process run under mpirun. It asks for
// MPI_THREAD_SERIALIZED: the main thread makes MPI calls between runs and the comm thread
// (mpi_transport.h) during them, never both at once. Errors come back as return codes
// (MPI_ERRORS_RETURN), turned into CommError naming the call. Unless the environment says
// otherwise, non-blocking all-reduces use Open MPI's ring algorithm (see mpi_session.cc).
#include <cstddef>
#include <string>
#include <vector>

namespace twinflow::comm {

class MpiSession {
 public:
  // True when this process was started by mpirun (Open MPI's environment says so); then, and
  // only then, the launcher starts a session.
  static bool LaunchedByMpirun();

  // `program` ("twinflow run") prefixes the message with which the process ends when MPI does
  // not start within `start_seconds` (DeadlineGuard): a process of the job never started MPI.
  explicit MpiSession(const std::string& program, double start_seconds = kStartSeconds);
  static constexpr double kStartSeconds = 10;
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks of its node (those sharing memory): which local devices
  // (GPUs) it should take.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Ends every rank's process: prints nothing (the caller has), exit status `code`.
  [[noreturn]] void Abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

// Throws CommError "<call>: <MPI's message>" when `code` is not MPI_SUCCESS.
void CheckMpi(int code, const std::string& call);

// Every rank's `bytes`, in rank order, on every rank (blocking, over MPI_COMM_WORLD).
std::vector<std::vector<std::byte>> AllgatherBytes(const std::vector<std::byte>& bytes);
// The same for text: what ranks compare before a run (job descriptions, Plan hashes).
std::vector<std::string> AllgatherText(const std::string& text);

// The startup agreement: every rank's `text`, in rank order, on every rank, within a deadline.
// Rank 0 collects the texts point to point (polling) and sends them all back, so that a rank
// that never calls in (stopped, hung, or running another command) is named: TimeoutError on
// rank 0 naming the ranks that did not answer within `seconds`, and on the others naming rank
// 0 after 1.5 x `seconds`. Callers end the job (MpiSession::Abort) on that error.
std::vector<std::string> GatherAtStartup(const std::string& text, double seconds);

}  // namespace twinflow::comm
