#include "planner/tune_group.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "engine/core/error.h"

namespace twinflow::planner {
namespace {

class Lone : public TuneGroup {
 public:
  Lone() : TuneGroup(0, 1) {}
  const char* noun() const override { return "processes"; }
  const char* member_noun() const override { return "job"; }
  std::vector<std::string> Allgather(const std::string& mine) override { return {mine}; }
};

// Moves all `size` bytes at `at` through `io` (read or write) on a pipe, retried when a signal
// (Ctrl-C, which the tune handles) interrupts it; false when the other end is gone.
template <typename Byte, typename Io>
bool Whole(Io io, int fd, Byte* at, size_t size) {
  while (size > 0) {
    const ssize_t n = io(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const void* data, size_t size) {
  return Whole(write, fd, static_cast<const char*>(data), size);
}

bool ReadAll(int fd, void* data, size_t size) {
  return Whole(read, fd, static_cast<char*>(data), size);
}

// A frame: the text's length, then the text.
bool WriteFrame(int fd, const std::string& text) {
  const uint64_t size = text.size();
  return WriteAll(fd, &size, sizeof size) && WriteAll(fd, text.data(), text.size());
}

bool ReadFrame(int fd, std::string& text) {
  uint64_t size = 0;
  if (!ReadAll(fd, &size, sizeof size)) return false;
  text.resize(size);
  return ReadAll(fd, text.data(), size);
}

// Member 0 and its children: each child has a pipe up (its text) and a pipe down (everyone's).
// Lifetime: member 0's owns the children's pipe ends and reaps the children when destroyed.
class Forked : public TuneGroup {
 public:
  struct Link {
    pid_t pid = -1;
    int up = -1, down = -1;  // member 0: read up, write down; a child: the other ends
  };
  Forked(int member, int size, std::vector<Link> links)
      : TuneGroup(member, size), links_(std::move(links)) {}
  ~Forked() override {
    for (const Link& l : links_) {
      close(l.up);
      close(l.down);
    }
    if (member() != 0) return;
    for (const Link& l : links_) waitpid(l.pid, nullptr, 0);
  }
  const char* noun() const override { return "processes"; }
  const char* member_noun() const override { return "job"; }

  std::vector<std::string> Allgather(const std::string& mine) override {
    std::vector<std::string> all(size());
    if (member() != 0) {
      const Link& l = links_.front();
      bool ok = WriteFrame(l.up, mine);
      for (std::string& text : all) ok = ok && ReadFrame(l.down, text);
      if (!ok) throw CommError("tune: process 0 of --jobs " + std::to_string(size()) + " is gone");
      return all;
    }
    all[0] = mine;
    for (int c = 1; c < size(); ++c) {
      if (!ReadFrame(links_[c - 1].up, all[c])) throw Gone(c);
    }
    for (int c = 1; c < size(); ++c) {
      for (const std::string& text : all) {
        if (!WriteFrame(links_[c - 1].down, text)) throw Gone(c);
      }
    }
    return all;
  }

 private:
  CommError Gone(int c) const {
    return CommError("tune: process " + std::to_string(c) + " of --jobs " + std::to_string(size()) +
                     " (pid " + std::to_string(links_[c - 1].pid) +
                     ") exited before its share was done");
  }

  std::vector<Link> links_;
};

}  // namespace

std::unique_ptr<TuneGroup> LoneTune() { return std::make_unique<Lone>(); }

std::unique_ptr<TuneGroup> ForkTune(int jobs) {
  if (jobs <= 1) return LoneTune();
  // A child writing to member 0 after it died must fail with EPIPE, not die of SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<Forked::Link> parent_ends;
  for (int c = 1; c < jobs; ++c) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) {
      throw CommError(std::string("tune --jobs: pipe: ") + std::strerror(errno));
    }
    const pid_t pid = fork();
    if (pid < 0) throw CommError(std::string("tune --jobs: fork: ") + std::strerror(errno));
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      for (const Forked::Link& l : parent_ends) {  // the earlier children's, not this one's
        close(l.up);
        close(l.down);
      }
      return std::make_unique<Forked>(c, jobs, std::vector<Forked::Link>{{-1, up[1], down[0]}});
    }
    close(up[1]);
    close(down[0]);
    parent_ends.push_back({pid, up[0], down[1]});
  }
  return std::make_unique<Forked>(0, jobs, std::move(parent_ends));
}

void EndForkedChild() {
  std::cout.flush();
  std::cerr.flush();
  _exit(0);
}

int DefaultJobs(int most) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // Each job keeps its own caches: a GPT-3 175B tune on 1,024 GPUs peaks at 1.3 GB a process.
  // One job per 2 GiB of memory leaves room for the largest tunes measured.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const int64_t by_memory =
      pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / (int64_t{2} << 30) : most;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({most, cores, by_memory})));
}

}  // namespace twinflow::planner
