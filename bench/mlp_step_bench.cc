// One SGD training step of the MLP on in-process CPU devices (one thread per device, one BLAS
// thread each), next to the host's single-threaded sgemm rate, its roofline.
//
// BM_Sgemm/M/K/N: cblas_sgemm C[M,N] = A[M,K] B[K,N] with one OpenBLAS thread. Counter GFLOPs
// (per CPU second).
// BM_SgemmConcurrent/.../threads:T: T threads each running that sgemm at once, by wall time.
// Counter GFLOPs (all threads together): what the cores give a T-device step right now.
// BM_MlpStep/<widths>/b<batch>/<strategy>: the model is compiled once and a ThreadedExecutor
// built and warmed up with one step; each iteration is one Run of one step (wall time, which
// includes starting the device threads and assembling the loss). Counters: step_ms,
// samples_per_s and GFLOPs (6 x batch x sum(in x out) per step: forward, input and weight
// gradients) by wall time; cpu_ms (the process's CPU time per step, all threads) and
// GFLOPs_per_core (flops over that CPU time), which hold still when other work shares the
// cores; of_sgemm (GFLOPs_per_core over the single-threaded 512x4096x4096 sgemm rate: how
// close each busy core gets to BLAS's own speed); compile_s (build and compile the model).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"

namespace twinflow {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// CPU time of this thread or process: on shared cores wall time also counts other work.
double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Row-major sgemm operands filled with uniform [-1, 1) values.
struct SgemmOperands {
  SgemmOperands(int64_t m, int64_t k, int64_t n) : m(m), k(k), n(n) {
    Rng rng(11);
    a = Tensor::Random(Shape{m, k}, DType::kF32, rng);
    b = Tensor::Random(Shape{k, n}, DType::kF32, rng);
    c = Tensor(Shape{m, n}, DType::kF32);
  }
  void Multiply() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data<float>(), static_cast<int>(k), b.data<float>(),
                static_cast<int>(n), 0.0f, c.data<float>(), static_cast<int>(n));
  }
  int64_t m, k, n;
  Tensor a, b, c;
};

void BM_Sgemm(benchmark::State& state) {
  openblas_set_num_threads(1);
  SgemmOperands ops(state.range(0), state.range(1), state.range(2));
  for (auto _ : state) {
    ops.Multiply();
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(ops.m * ops.k * ops.n);
  state.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// T threads, each multiplying its own operands once per iteration; wall time to the last join.
void BM_SgemmConcurrent(benchmark::State& state) {
  const int64_t threads = state.range(3);
  std::vector<SgemmOperands> ops;
  for (int64_t t = 0; t < threads; ++t)
    ops.emplace_back(state.range(0), state.range(1), state.range(2));
  double wall_seconds = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> workers;
    for (SgemmOperands& o : ops) {
      workers.emplace_back([&o] {
        openblas_set_num_threads(1);
        o.Multiply();
      });
    }
    for (std::thread& w : workers) w.join();
    const double seconds = Seconds(start);
    wall_seconds += seconds;
    state.SetIterationTime(seconds);
  }
  const double flops = 2.0 * static_cast<double>(threads * ops[0].m * ops[0].k * ops[0].n);
  state.counters["GFLOPs"] =
      flops * static_cast<double>(state.iterations()) / std::max(wall_seconds, 1e-12) * 1e-9;
}

// The single-threaded sgemm rate on the MLP's largest layer (thread CPU time, best of five),
// measured once.
double SgemmRoofline() {
  static const double rate = [] {
    openblas_set_num_threads(1);
    SgemmOperands ops(512, 4096, 4096);
    ops.Multiply();  // warm-up
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const double start = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
      ops.Multiply();
      best = std::min(best, CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - start);
    }
    return 2.0 * 512 * 4096 * 4096 / best * 1e-9;
  }();
  return rate;
}

struct MlpCase {
  std::vector<int64_t> widths;
  int64_t batch = 0;
  int64_t devices = 1;
  std::string strategy;
};

std::string CaseName(const MlpCase& c) {
  std::string name = "BM_MlpStep/";
  for (size_t i = 0; i < c.widths.size(); ++i) {
    name += (i ? "-" : "") + std::to_string(c.widths[i]);
  }
  return name + "/b" + std::to_string(c.batch) + "/" + c.strategy;
}

void BM_MlpStep(benchmark::State& state, const MlpCase& c) {
  const graph::OpRegistry registry = ops::BuiltinOps();
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  models::MlpConfig config;
  config.widths = c.widths;
  config.batch = c.batch;
  models::BuildOptions options;
  options.devices = c.devices;
  options.strategy = parallel::ParseStrategy(c.strategy);
  options.optimizer = graph::ParseOptimizer("sgd");

  const Clock::time_point compile_start = Clock::now();
  const models::BuiltModel model = models::BuildMlp(registry, config, options);
  compiler::CompileOptions compile;
  compile.lower.fetches = {model.loss};
  const sbp::AlphaBetaCostModel cost(sbp::AlphaBetaPreset("cpu-host"));
  const compiler::Compiled compiled = compiler::Compile(model.graph, registry, cost, compile);
  const double compile_seconds = Seconds(compile_start);

  // One batch reused every step, so that making synthetic data is not timed.
  const std::map<std::string, Tensor> batch = models::SyntheticBatch(model, 0, 7);
  const runtime::FeedFn feeds = [&batch](int64_t) { return batch; };
  runtime::ThreadedExecutor executor(compiled.plan, kernels);
  runtime::RunOptions run;
  run.steps = 1;
  run.watchdog_seconds = 600;
  executor.Run(feeds, run);  // warm-up: first touches of the arenas, BLAS buffers

  double wall_seconds = 0, cpu_seconds = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    const double cpu_start = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    const runtime::RunResult result = executor.Run(feeds, run);
    cpu_seconds += CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
    const double seconds = Seconds(start);
    wall_seconds += seconds;
    state.SetIterationTime(seconds);
    benchmark::DoNotOptimize(result.fetches);
  }

  double macs = 0;
  for (size_t i = 0; i + 1 < c.widths.size(); ++i) {
    macs += static_cast<double>(c.widths[i] * c.widths[i + 1]);
  }
  const double flops = 6.0 * static_cast<double>(c.batch) * macs;
  const double steps = static_cast<double>(std::max<int64_t>(1, state.iterations()));
  const double step = wall_seconds / steps, cpu_step = cpu_seconds / steps;
  state.counters["step_ms"] = step * 1e3;
  state.counters["samples_per_s"] = static_cast<double>(c.batch) / step;
  state.counters["GFLOPs"] = flops / step * 1e-9;
  state.counters["cpu_ms"] = cpu_step * 1e3;
  state.counters["GFLOPs_per_core"] = flops / cpu_step * 1e-9;
  state.counters["of_sgemm"] = flops / cpu_step * 1e-9 / SgemmRoofline();
  state.counters["devices"] = static_cast<double>(c.devices);
  state.counters["compile_s"] = compile_seconds;
}

void RegisterAll() {
  benchmark::RegisterBenchmark("BM_Sgemm", BM_Sgemm)
      ->ArgNames({"M", "K", "N"})
      ->Args({512, 784, 4096})
      ->Args({512, 4096, 4096})
      ->Args({128, 784, 1024})
      ->Args({128, 1024, 1024})
      ->Unit(benchmark::kMillisecond);
  // The same sgemm on 1, 2 and 4 threads at once, each with its own operands, by wall time: the
  // aggregate rate the cores give a multi-device step right now.
  benchmark::RegisterBenchmark("BM_SgemmConcurrent", BM_SgemmConcurrent)
      ->ArgNames({"M", "K", "N", "threads"})
      ->ArgsProduct({{512}, {4096}, {4096}, {1, 2, 4}})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);

  const std::vector<std::pair<int64_t, std::string>> strategies = {
      {1, "dp=1"}, {2, "dp=2"}, {2, "tp=2"}, {4, "dp=4"}, {4, "dp=2,tp=2"}, {4, "tp=4"}};
  // The quick model first, then the 784-4096-4096-10 at batch 512 (about 1 s a step on
  // one core, so a few fixed iterations).
  for (const auto& [devices, strategy] : strategies) {
    const MlpCase c{{784, 1024, 1024, 10}, 128, devices, strategy};
    benchmark::RegisterBenchmark(CaseName(c).c_str(), BM_MlpStep, c)
        ->UseManualTime()
        ->MinTime(1.0)
        ->Unit(benchmark::kMillisecond);
  }
  for (const auto& [devices, strategy] : strategies) {
    const MlpCase c{{784, 4096, 4096, 10}, 512, devices, strategy};
    benchmark::RegisterBenchmark(CaseName(c).c_str(), BM_MlpStep, c)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace twinflow

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  twinflow::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
