#pragma once
// DeadlineGuard: ends the process when a wait on other ranks that cannot be polled outlasts its
// deadline. MPI_Init is one: under mpirun it blocks until every process of the job starts MPI,
// so a rank that runs another program, or died first, would hang the others for ever. On
// expiry it prints `message` to stderr and exits with `code` (std::_Exit: MPI is not usable
// then); mpirun, seeing a rank fail, ends the rest of the job.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace twinflow::comm {

class DeadlineGuard {
 public:
  DeadlineGuard(double seconds, std::string message, int code = 1);
  ~DeadlineGuard();  // disarms: the guarded wait is over
  DeadlineGuard(const DeadlineGuard&) = delete;
  DeadlineGuard& operator=(const DeadlineGuard&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace twinflow::comm
