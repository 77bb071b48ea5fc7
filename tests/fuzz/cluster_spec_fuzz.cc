// libFuzzer target: the ClusterSpec text parser and its range checks. Any text is a spec whose
// every field is in range, or an InvalidArgumentError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "simulator/hardware/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    twinflow::sim::ParseClusterSpec(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const twinflow::InvalidArgumentError&) {
  }
  return 0;
}
