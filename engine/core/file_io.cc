#include "engine/core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "engine/core/error.h"

namespace twinflow {
namespace {

namespace fs = std::filesystem;

std::string Cause(int error) { return std::error_code(error, std::generic_category()).message(); }

[[noreturn]] void FailWrite(const std::string& path, const std::string& why) {
  throw InvalidArgumentError("cannot write '" + path + "': " + why);
}

// What a path names once links are followed, for deciding how to write or read it.
enum class PathKind { kAbsent, kRegular, kStream, kDirectory, kOther };

PathKind KindOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return PathKind::kAbsent;
  if (S_ISREG(st.st_mode)) return PathKind::kRegular;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return PathKind::kStream;
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  return PathKind::kOther;
}

// Closes the descriptor it owns when it goes out of scope (the success path closes it itself,
// checking the result).
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now; a failure (a delayed write error on some file systems) is the write's failure.
  void Close(const std::string& path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) FailWrite(path, Cause(errno));
  }

 private:
  int fd_;
};

void WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const size_t chunk = std::min(bytes.size() - done, size_t{1} << 30);
    const ssize_t n = ::write(fd, bytes.data() + done, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) FailWrite(path, Cause(n < 0 ? errno : ENOSPC));
    done += static_cast<size_t>(n);
  }
}

// A device or FIFO: written through, as a shell redirection would.
void WriteInPlace(const std::string& path, const std::string& bytes) {
  OwnedFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) FailWrite(path, Cause(errno));
  WriteAll(fd.get(), bytes, path);
  fd.Close(path);
}

// `.tmp.PID` files next to `target` left by writes whose process is gone (killed in the
// instant between link and rename, or on a file system without O_TMPFILE).
void RemoveStaleTemporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(
           target.has_parent_path() ? target.parent_path() : fs::path("."), error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.size() > 9 || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    if (::kill(std::stoi(pid), 0) != 0 && errno == ESRCH) fs::remove(entry.path(), error);
  }
}

// The bytes in a file of `folder` that has no name yet, linked as `tmp` once complete; false
// where the file system or /proc does not allow it (the caller then writes `tmp` directly).
bool WriteUnnamedThenLink(const std::string& folder, const std::string& tmp,
                          const std::string& bytes, const std::string& path) {
  OwnedFd fd(::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
  if (fd.get() < 0) return false;
  WriteAll(fd.get(), bytes, path);
  if (::fsync(fd.get()) != 0) FailWrite(path, Cause(errno));
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    return false;
  }
  fd.Close(path);
  return true;
}

void WriteNamed(const std::string& tmp, const std::string& bytes, const std::string& path) {
  OwnedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (fd.get() < 0) FailWrite(path, "cannot create '" + tmp + "': " + Cause(errno));
  WriteAll(fd.get(), bytes, path);
  if (::fsync(fd.get()) != 0) FailWrite(path, Cause(errno));
  fd.Close(path);
}

// A regular file or a new one: complete in a temporary, then renamed over the target.
void WriteReplacing(const fs::path& target, const std::string& bytes, const std::string& path) {
  const std::string folder = target.has_parent_path() ? target.parent_path().string() : ".";
  const std::string tmp = target.string() + ".tmp." + std::to_string(::getpid());
  RemoveStaleTemporaries(target);
  try {
    if (!WriteUnnamedThenLink(folder, tmp, bytes, path)) WriteNamed(tmp, bytes, path);
    if (::rename(tmp.c_str(), target.c_str()) != 0) FailWrite(path, Cause(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  switch (KindOf(path)) {
    case PathKind::kStream:
      return WriteInPlace(path, bytes);
    case PathKind::kDirectory:
      FailWrite(path, "it is a directory");
    case PathKind::kOther:
      FailWrite(path, "it is neither a regular file, a device nor a FIFO");
    case PathKind::kRegular: {
      // Replace the file a link points to, not the link.
      std::error_code error;
      const fs::path target = fs::canonical(path, error);
      return WriteReplacing(error ? fs::path(path) : target, bytes, path);
    }
    case PathKind::kAbsent:
      return WriteReplacing(fs::path(path), bytes, path);
  }
}

std::string ReadFile(const std::string& path, int64_t max_bytes) {
  const auto fail = [&](const std::string& why) -> void {
    throw InvalidArgumentError("cannot read '" + path + "': " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(Cause(errno));
  if (S_ISDIR(st.st_mode)) fail("it is a directory, not a file");
  // A FIFO or device blocks until a writer comes, or never ends.
  if (!S_ISREG(st.st_mode)) fail("it is not a regular file (a FIFO, device or socket)");
  if (st.st_size > max_bytes) {
    fail("it has " + std::to_string(st.st_size) + " bytes, more than the " +
         std::to_string(max_bytes) + " this reads");
  }
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(Cause(errno));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(Cause(errno));
    if (n == 0) fail("it shrank while being read");
    done += static_cast<size_t>(n);
  }
  return bytes;
}
std::string Digest(const std::string& bytes) {
  uint64_t fnv = 0xcbf29ce484222325ull;
  uint64_t mix = 0x243f6a8885a308d3ull ^ bytes.size();
  for (unsigned char c : bytes) {
    fnv = (fnv ^ c) * 0x100000001b3ull;
    mix = (mix + c + 1) * 0x9e3779b97f4a7c15ull;
    mix ^= mix >> 29;
  }
  mix ^= mix >> 32;
  mix *= 0xd6e8feb86659fd93ull;
  mix ^= mix >> 32;
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(fnv),
                static_cast<unsigned long long>(mix));
  return std::string(hex, 32);
}

}  // namespace twinflow
