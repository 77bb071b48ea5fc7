#include "planner/setup_warning.h"

#include <algorithm>

namespace twinflow::planner {

std::string SetupWarning(bool llm, DType precision, bool fused_attention,
                         const sim::ClusterSpec& spec) {
  if (!llm || spec.device().kind() != sim::DEVICE_KIND_GPU) return "";
  const bool fp32 = precision == DType::kF32, unfused = !fused_attention;
  if (!fp32 && !unfused) return "";
  const std::string what = std::string(fp32 ? "in fp32" : "") + (fp32 && unfused ? " and " : "") +
                           (unfused ? "with unfused attention" : "");
  const std::string change = std::string(fp32 ? "precision=bf16 in the strategy" : "") +
                             (fp32 && unfused ? ", " : "") + (unfused ? "--attention fused" : "");
  return "warning: an LLM on GPUs " + what +
         " is not how 2025 runs train (bf16 or fp8, flash attention): set " + change;
}

std::string SetupWarning(const models::BuiltModel& model, const sim::ClusterSpec& spec) {
  const auto& ops = model.graph.ops();
  const bool fused = std::any_of(
      ops.begin(), ops.end(), [](const graph::OpNode& op) { return op.type == "fused_attention"; });
  return SetupWarning(model.tokens_per_step > 0, model.strategy.precision, fused, spec);
}

}  // namespace twinflow::planner
