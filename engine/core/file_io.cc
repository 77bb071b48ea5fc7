#include "engine/core/file_io.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "engine/core/error.h"

namespace twinflow {

void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InvalidArgumentError("cannot write '" + tmp + "' (for '" + path + "')");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw InvalidArgumentError("cannot write '" + tmp + "' (for '" + path + "'): write failed");
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InvalidArgumentError("cannot write '" + path + "': " + error.message());
  }
}

std::string ReadFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InvalidArgumentError("'" + path + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgumentError("cannot read '" + path + "': no such file or no access");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InvalidArgumentError("cannot read '" + path + "': read failed");
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
