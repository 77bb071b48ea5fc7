#include "engine/comm/deadline_guard.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace twinflow::comm {

DeadlineGuard::DeadlineGuard(double seconds, std::string message, int code) {
  thread_ = std::thread([this, seconds, message = std::move(message), code] {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto limit = std::chrono::duration<double>(seconds);
    if (done_changed_.wait_for(lock, limit, [this] { return done_; })) return;
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(code);
  });
}

DeadlineGuard::~DeadlineGuard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_changed_.notify_all();
  thread_.join();
}

}  // namespace twinflow::comm
