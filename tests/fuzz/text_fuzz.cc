// libFuzzer target: the text parsers of the command line: layouts ("cpu:0-3 [2,2] (S(0),B)"),
// shapes, strategies ("dp=2,tp=4,pp=2,mb=8") and optimizer specs. Any text parses or is a
// twinflow::Error naming what was wrong.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/shape.h"
#include "engine/graph/optimizer.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    twinflow::sbp::ParseLayout(text);
  } catch (const twinflow::Error&) {
  }
  try {
    twinflow::ParseShape(text);
  } catch (const twinflow::Error&) {
  }
  try {
    twinflow::parallel::ParseStrategy(text);
  } catch (const twinflow::Error&) {
  }
  try {
    twinflow::graph::ParseOptimizer(text);
  } catch (const twinflow::Error&) {
  }
  return 0;
}
