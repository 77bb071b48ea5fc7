// libFuzzer target: the checkpoint loader. Any bytes load or are an InvalidArgumentError; each
// input is also tried with a valid digest appended, so the parser behind the digest check is
// reached.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/runtime/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (const std::string& file : {bytes, bytes + twinflow::Digest(bytes)}) {
    try {
      twinflow::runtime::ParseCheckpoint(file, "fuzz");
    } catch (const twinflow::InvalidArgumentError&) {
    }
  }
  return 0;
}
