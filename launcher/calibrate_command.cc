#include "launcher/calibrate_command.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "engine/compiler/compile.h"
#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/rng.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/kernel_key.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_rates.h"
#include "engine/runtime/device_timing.h"
#include "engine/runtime/prepared_task.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/builtin_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "launcher/cluster_args.h"
#include "launcher/model_args.h"
#include "simulator/calibration_fit.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median of repeated calls of `fn`: at least 3, until `budget_s` are spent or 50 calls
// made, after one untimed call.
template <typename Fn>
double MedianSeconds(Fn fn, double budget_s = 0.02) {
  fn();
  std::vector<double> times;
  const auto begin = Clock::now();
  while (times.size() < 3 || (times.size() < 50 && Since(begin) < budget_s)) {
    const auto start = Clock::now();
    fn();
    times.push_back(Since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// One task's kernel, ready to call, on tensors of its physical shapes: random floats, zero
// integers (valid indices and labels).
class KernelCall {
 public:
  KernelCall(const runtime::PreparedTask& t, Rng& rng)
      : task_(t), ctx_{t.attrs,         {}, {}, t.input_regions, t.output_regions, t.input_logical,
                       t.output_logical} {
    for (const plan::TensorDesc& d : t.task->op().inputs()) {
      const Shape shape(std::vector<int64_t>(d.shape().begin(), d.shape().end()));
      const DType dtype = plan::FromProto(d.dtype(), t.task->name());
      inputs_.push_back(IsFloating(dtype) ? Tensor::Random(shape, dtype, rng)
                                          : Tensor(shape, dtype));
    }
    for (const plan::TensorDesc& d : t.task->op().outputs()) {
      outputs_.emplace_back(Shape(std::vector<int64_t>(d.shape().begin(), d.shape().end())),
                            plan::FromProto(d.dtype(), t.task->name()));
    }
    for (const Tensor& in : inputs_) ctx_.inputs.push_back(&in);
    for (Tensor& out : outputs_) ctx_.outputs.push_back(&out);
  }
  KernelCall(const KernelCall&) = delete;
  KernelCall& operator=(const KernelCall&) = delete;
  void operator()() { task_.kernel(ctx_); }

 private:
  const runtime::PreparedTask& task_;
  std::vector<Tensor> inputs_, outputs_;
  kernels::KernelContext ctx_;
};

// Runs `fn` while `others` more threads each run their own copy of `work` over and over: the
// host's cores contending for caches and memory as in a parallel run (device threads on every
// core).
template <typename Fn, typename MakeWork>
double WithOthersBusy(int others, const MakeWork& make_work, Fn fn) {
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < others; ++i) {
    threads.emplace_back([&, i] {
      auto work = make_work(i);
      work();
      ++started;
      while (!stop) work();
    });
  }
  while (started < others) std::this_thread::yield();
  const double seconds = fn();
  stop = true;
  for (std::thread& t : threads) t.join();
  return seconds;
}

// Seconds the runtime spends per act beyond the kernel: a tiny MLP (two-element layers, so
// the kernels cost next to nothing) trains 200 steps on one in-process device, and its wall
// time is spread over its acts.
double RuntimeOverheadPerAct(const graph::OpRegistry& registry,
                             const kernels::KernelRegistry& kernels, DeviceType device) {
  models::MlpConfig config;
  config.widths = {2, 2, 2, 2};
  config.batch = 2;
  models::BuildOptions options;
  options.device = device;
  const models::BuiltModel model = models::BuildMlp(registry, config, options);
  compiler::CompileOptions compile;
  compile.lower.fetches = {model.loss};
  const plan::Plan plan =
      compiler::Compile(model.graph, registry, sbp::AlphaBetaCostModel(), compile).plan;
  runtime::ThreadedExecutor executor(plan, kernels);
  runtime::RunOptions run;
  run.steps = 200;
  const auto feeds = [&](int64_t step) { return models::SyntheticBatch(model, step, 1); };
  executor.Run(feeds, run);  // warm up
  const double seconds = executor.Run(feeds, run).seconds;
  int64_t acts = 0;
  for (int64_t a : plan::ActsPerStep(plan)) acts += a;
  return seconds / static_cast<double>(acts * run.steps);
}

int HostCores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Bytes per second (read and write) of one thread copying 64 MiB, while `others` more threads
// copy 64 MiB of their own.
double CopyBandwidth(int others) {
  const size_t bytes = size_t{64} << 20;
  std::vector<char> a(bytes, 1), b(bytes);
  const auto copier = [bytes](int) {
    return [a = std::vector<char>(bytes, 1), b = std::vector<char>(bytes)]() mutable {
      std::memcpy(b.data(), a.data(), a.size());
    };
  };
  const double seconds = WithOthersBusy(others, copier, [&] {
    // 100 ms: memory bandwidth under contention swings more than a kernel's time
    return MedianSeconds([&] { std::memcpy(b.data(), a.data(), bytes); }, 0.1);
  });
  return 2.0 * static_cast<double>(bytes) / seconds;
}

// The cpu path: the Plan's kernels timed on this host alone and with every core busy, its copy
// bandwidth both ways and the runtime's cost per act, into the cpu-local spec (or --append's).
int CalibrateOnCpu(const ParsedArgs& parsed, const graph::OpRegistry& registry,
                   const models::BuiltModel& model, const plan::Plan& plan, std::ostream& out) {
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  const std::vector<runtime::PreparedTask> tasks = runtime::PrepareTasks(plan, kernels);

  sim::ClusterSpec spec =
      parsed.Given("append")
          ? sim::ParseClusterSpec(ReadFile(parsed.Get("append")), parsed.Get("append"))
          : sim::Preset("cpu-local", 1);
  std::map<std::string, std::pair<double, double>> table;  // key -> alone, contended
  for (const sim::KernelTime& k : spec.kernel_times()) {
    table[k.key()] = {k.seconds(), k.contended_seconds()};
  }
  const auto start = Clock::now();
  Rng rng(11);
  int timed = 0;
  for (const runtime::PreparedTask& t : tasks) {
    if (t.task->kind() != plan::COMPUTE) continue;
    const std::string key = plan::KernelKey(*t.task);
    if (table.count(key)) continue;
    KernelCall call(t, rng);
    table[key].first = MedianSeconds([&] { call(); });
    table[key].second = WithOthersBusy(
        HostCores() - 1,
        [&t](int i) {
          Rng own(100 + static_cast<uint64_t>(i));
          return KernelCall(t, own);
        },
        [&] { return MedianSeconds([&] { call(); }); });
    ++timed;
  }
  const double bandwidth = CopyBandwidth(0);
  spec.mutable_device()->set_kind(sim::DEVICE_KIND_CPU);
  spec.mutable_device()->set_memory_bandwidth(bandwidth);
  spec.mutable_device()->set_contended_memory_bandwidth(CopyBandwidth(HostCores() - 1));
  const double overhead = RuntimeOverheadPerAct(registry, kernels, DeviceType::kCpu);
  spec.mutable_device()->set_launch_overhead_s(overhead);
  spec.set_devices_per_node(
      std::max<int32_t>(spec.devices_per_node(), static_cast<int32_t>(plan.devices_size())));
  spec.set_cores_per_node(HostCores());
  spec.clear_kernel_times();
  for (const auto& [key, seconds] : table) {
    sim::KernelTime* k = spec.add_kernel_times();
    k->set_key(key);
    k->set_seconds(seconds.first);
    k->set_contended_seconds(seconds.second);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(spec, &text);
  WriteFileAtomically(parsed.Get("output"), text);
  out << "timed " << timed << " kernels (" << table.size() << " in the table) in "
      << FormatSeconds(Since(start)) << "; memory bandwidth "
      << FormatBytes(static_cast<int64_t>(bandwidth)) << "/s; " << FormatSeconds(overhead)
      << " of runtime per act; " << spec.cores_per_node() << " cores; wrote "
      << parsed.Get("output") << " (model " << parsed.Get("model") << ", strategy "
      << model.strategy.ToString() << ", optimizer " << models::OptimizerLabel(model) << ")\n";
  return 0;
}

// The cuda path: the Plan's kernels timed on GPU 0 through the runtime's CudaDevice, its copy
// bandwidth and the runtime's cost per act, then the simulator's device model fitted to them on
// top of the base spec (--cluster, a preset's data sheet). Built, not verified on a GPU.
int CalibrateOnGpu(const ParsedArgs& parsed, const graph::OpRegistry& registry,
                   const models::BuiltModel& model, const plan::Plan& plan, std::ostream& out) {
  if (!kernels::HaveCudaKernels()) {
    throw InvalidArgumentError(
        "--device cuda: this build of twinflow has no CUDA (configure with TWINFLOW_CUDA=ON where "
        "the toolkit is)");
  }
  const kernels::KernelRegistry kernels = kernels::BuiltinKernels();
  const std::vector<runtime::PreparedTask> tasks = runtime::PrepareTasks(plan, kernels);
  sim::ClusterSpec spec = ClusterFromArgs(parsed);
  const auto start = Clock::now();
  sim::DeviceMeasurements measured;
  {
    const auto device = runtime::MakeDevice(plan.devices(0), runtime::DevicePlace{});
    measured.kernel_seconds = runtime::TimeKernels(tasks, *device, 11);
  }
  {
    const auto device = runtime::MakeDevice(plan.devices(0), runtime::DevicePlace{});
    measured.copy_bandwidth = runtime::DeviceCopyBandwidth(*device, int64_t{256} << 20);
  }
  measured.launch_overhead_s = RuntimeOverheadPerAct(registry, kernels, DeviceType::kCuda);
  const std::vector<sim::ClassFit> fits = sim::FitDeviceModel(plan, measured, spec);
  std::string text;
  google::protobuf::TextFormat::PrintToString(spec, &text);
  WriteFileAtomically(parsed.Get("output"), text);
  out << "timed " << measured.kernel_seconds.size() << " kernels on " << spec.device().name()
      << "'s base spec in " << FormatSeconds(Since(start)) << "; copy bandwidth "
      << FormatBytes(static_cast<int64_t>(measured.copy_bandwidth)) << "/s (memory efficiency "
      << spec.device().memory_efficiency() << "); " << FormatSeconds(measured.launch_overhead_s)
      << " of runtime per act\n";
  for (const sim::ClassFit& f : fits) {
    out << "  " << plan::KernelClass_Name(f.kernel_class) << ": ";
    if (f.kernels == 0) {
      out << "no kernel long enough, kept the base spec's efficiency\n";
    } else {
      out << "efficiency " << f.efficiency << " from " << f.kernels << " kernels\n";
    }
  }
  out << "wrote " << parsed.Get("output") << " (model " << parsed.Get("model") << ", strategy "
      << model.strategy.ToString() << ")\n";
  return 0;
}

}  // namespace

int RunCalibrateCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow calibrate",
                   "Time the kernels a model's Plan runs, on this host's CPU or (--device cuda) "
                   "its GPU, and write the cluster spec (with its kernel table) the simulator "
                   "uses: cpu-local, or on a GPU the --cluster spec with efficiencies fitted to "
                   "what was measured.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  parser.Required("output", "FILE", "where to write the ClusterSpec (protobuf text, .pbtxt)")
      .Optional("append", "FILE", "add to the kernel table of this spec instead of starting anew")
      .Epilog(
          "example:\n  twinflow calibrate --model mlp --devices 2 --strategy tp=2 --output "
          "cpu.pbtxt\n  twinflow sim --model mlp --devices 2 --strategy tp=2 --cluster "
          "cpu.pbtxt\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  const graph::OpRegistry registry = ops::BuiltinOps();
  const models::BuiltModel model = BuildModelFromArgs(parsed, registry);
  const plan::Plan plan = CompileFromArgs(model, parsed, registry).plan;
  if (plan.devices(0).type() == plan::DEVICE_CUDA) {
    return CalibrateOnGpu(parsed, registry, model, plan, out);
  }
  if (parsed.Given("cluster") || parsed.Given("nodes")) {
    throw InvalidArgumentError(
        "--cluster and --nodes give the base spec of a GPU calibration (--device cuda); a CPU "
        "calibration writes cpu-local (or adds to --append)");
  }
  return CalibrateOnCpu(parsed, registry, model, plan, out);
}

}  // namespace twinflow::launcher
