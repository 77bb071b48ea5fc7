#pragma once
// Files that must never be seen half-written (Plans, checkpoints): bytes go to a temporary
// file next to the target, which is then renamed over it, so a reader finds the old file or
// the new one. And the digest that guards their contents.
#include <string>

namespace twinflow {

// Writes `bytes` to `path` atomically. InvalidArgumentError naming the path when it cannot.
void WriteFileAtomically(const std::string& path, const std::string& bytes);

// Reads all of `path`; InvalidArgumentError naming it when it cannot be read.
std::string ReadFile(const std::string& path);

// 32 hex digits: two unrelated 64-bit hashes (FNV-1a and a multiply-rotate hash), so a
// corruption that collides in one is still caught by the other.
std::string Digest(const std::string& bytes);

}  // namespace twinflow
