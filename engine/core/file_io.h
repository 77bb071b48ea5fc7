#pragma once
// Files that must never be seen half-written (Plans, checkpoints, reports): bytes go to a
// temporary file next to the target, which is then renamed over it, so a reader finds the old
// file or the new one. And the digest that guards their contents.
#include <cstdint>
#include <limits>
#include <string>

namespace twinflow {

// Writes `bytes` to `path`. A regular file, or a path that does not exist yet, is replaced
// atomically: the bytes go to an unnamed temporary file in the same folder (O_TMPFILE; a named
// `.tmp.PID` one where the file system lacks it), synced, then renamed over the path, so a kill
// at any moment leaves the old file whole and no temporary behind (but a named one from the
// few microseconds between link and rename, which the next write there removes). A symbolic
// link is followed and its target replaced. A character device or FIFO cannot be replaced: it
// is written in place (/dev/null stays a device; /dev/full fails). Anything else (a folder, a
// socket) is refused. InvalidArgumentError naming the path and the cause when it cannot.
void WriteFileAtomically(const std::string& path, const std::string& bytes);

// Reads all of `path`, which must be a regular file of at most `max_bytes`: a FIFO or device
// could block for ever or never end, so those are refused. InvalidArgumentError naming the
// path and the cause.
std::string ReadFile(const std::string& path,
                     int64_t max_bytes = std::numeric_limits<int64_t>::max());

// 32 hex digits: two unrelated 64-bit hashes (FNV-1a and a multiply-rotate hash), so a
// corruption that collides in one is still caught by the other.
std::string Digest(const std::string& bytes);

}  // namespace twinflow
