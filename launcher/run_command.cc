#include "launcher/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>

#include "engine/core/text_format.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/builtin_ops.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/cpu/cpu_kernels.h"
#include "launcher/model_args.h"

namespace twinflow::launcher {
namespace {

// A step's loss: the sum of its micro-batches' shares (one value without micro-batches).
double StepLoss(const Tensor& fetched) {
  double sum = 0;
  for (int64_t i = 0; i < fetched.numel(); ++i) sum += fetched.GetDouble(i);
  return sum;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow run",
                   "Train a model on in-process CPU devices with synthetic data.");
  AddModelFlags(parser);
  parser.Optional("steps", "N", "training steps", "10")
      .Optional("data-seed", "N", "seed of the synthetic batches", "7")
      .Optional("watchdog", "SECONDS", "fail if no task finishes for this long", "60")
      .Optional("plan", "FILE", "run this Plan (from `twinflow compile` with the same model flags) "
                "instead of compiling")
      .Switch("check", "also run the single-device reference and compare every step's loss")
      .Epilog("example:\n  twinflow run --model mlp --devices 4 --strategy dp=2,tp=2 --steps 20 "
              "--check\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  const int64_t steps = parsed.GetInt("steps", 1, 1 << 20);
  const uint64_t data_seed = static_cast<uint64_t>(parsed.GetInt("data-seed", 0, 1LL << 40));
  const graph::OpRegistry registry = ops::BuiltinOps();
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  const models::BuiltModel model = BuildModelFromArgs(parsed, registry);
  const plan::Plan plan = !parsed.Given("plan")
                               ? CompileFromArgs(model, parsed, registry).plan
                               : LoadPlanForModel(parsed.Get("plan"), model);
  const runtime::FeedFn feeds = [&](int64_t step) {
    return models::SyntheticBatch(model, step, data_seed);
  };

  runtime::ThreadedExecutor executor(plan, kernels);
  runtime::RunOptions run;
  run.steps = steps;
  run.watchdog_seconds = parsed.GetPositiveDouble("watchdog");
  const runtime::RunResult result = executor.Run(feeds, run);
  const std::string loss = model.graph.tensor(model.loss).name;

  std::vector<double> reference;
  if (parsed.Given("check")) {
    // One device, the whole batch at once: the ground truth for any strategy.
    const models::BuiltModel whole = BuildModelFromArgs(parsed, registry, /*whole_batch=*/true);
    interpreter::ReferenceInterpreter interp(whole.graph, kernels);
    for (int64_t s = 0; s < steps; ++s) {
      reference.push_back(interp.Step(feeds(s), {whole.loss}).at(whole.loss).GetDouble(0));
    }
  }
  out << "model " << parsed.Get("model") << " on " << plan.devices_size()
      << " in-process devices, strategy " << model.strategy.ToString();
  if (parsed.Given("plan")) out << ", plan " << parsed.Get("plan");
  out << "\n";
  double worst = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const double value = StepLoss(result.fetches[s].at(loss));
    out << "step " << std::setw(4) << s << "  loss " << std::setprecision(8) << value;
    if (!reference.empty()) {
      const double diff = std::fabs(value - reference[s]) / std::max(1e-30, std::fabs(reference[s]));
      worst = std::max(worst, diff);
      out << "  reference " << reference[s] << "  rel. diff " << std::scientific
          << std::setprecision(2) << diff << std::defaultfloat;
    }
    out << "\n";
  }
  out << "step time " << FormatSeconds(result.seconds / static_cast<double>(steps))
      << " (mean of " << steps << " steps, " << FormatSeconds(result.seconds) << " in all)\n";
  if (!reference.empty()) {
    out << "largest relative difference from the reference: " << std::scientific
        << std::setprecision(2) << worst << std::defaultfloat << "\n";
  }
  return 0;
}

}  // namespace twinflow::launcher
