// The CUDA kernels against the CPU kernels: random instances of every op case, f32 and bf16,
// compared within a tolerance per dtype; reruns bit-identical; empty tensors; device faults.
// Every test skips (GTEST_SKIP, reported as skipped by ctest) when no CUDA device is usable.
#include <gtest/gtest.h>

#include <iostream>

#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/gpu/gpu_op_harness.h"

namespace twinflow::testing {
namespace {

constexpr int kInstancesPerOp = 20;

struct Fixture {
  graph::OpRegistry ops = ops::BuiltinOps();
  kernels::KernelRegistry cpu = kernels::CpuKernels();
  kernels::KernelRegistry cuda = [] {
    kernels::KernelRegistry r;
    kernels::RegisterCudaKernels(r);
    return r;
  }();
  OpRunner runner{ops, cpu};
};

Fixture& Shared() {
  static Fixture fixture;
  return fixture;
}

// Draws kInstancesPerOp instances of the op, runs both sides and compares; reports counts.
void MatchesCpu(const std::string& type, DType dtype, const kernels::OwnedCudaEnv& env) {
  Fixture& f = Shared();
  const OpCase op_case = OpCasesByType().at(type);
  Rng rng(0xC0DA + std::hash<std::string>{}(type));
  int compared = 0, no_kernel = 0;
  int64_t elements = 0;
  for (int n = 0; n < kInstancesPerOp; ++n) {
    const PairedInstance p = Pair(op_case.draw(rng), dtype, rng);
    const DType key = !p.gpu.inputs.empty() ? p.gpu.inputs[0].dtype : dtype;
    if (!f.cuda.Has({type, DeviceType::kCuda, key})) {
      ++no_kernel;  // an op without a CUDA kernel yet
      continue;
    }
    const std::vector<Tensor> want = f.runner.RunSingle(p.cpu, p.cpu_inputs);
    const std::vector<Tensor> got = RunOnDevice(f.cuda, f.runner, p, env);
    const std::string diff = CompareWithTolerance(got, want, dtype);
    EXPECT_EQ(diff, "") << type << " " << DTypeName(dtype) << " instance " << n;
    if (!diff.empty()) return;  // one report per op is enough
    ++compared;
    for (const Tensor& t : got) elements += t.numel();
  }
  std::cout << type << " " << DTypeName(dtype) << ": " << compared << " instances, " << elements
            << " output elements compared, " << no_kernel << " without a cuda kernel\n";
}

// One test per dtype over every op case (one process and one CUDA context, not one per op).
TEST(CudaOps, MatchCpuF32) {
  REQUIRE_CUDA_DEVICE();
  kernels::OwnedCudaEnv env;
  for (const OpCase& c : AllOpCases()) MatchesCpu(c.type, DType::kF32, env);
}

TEST(CudaOps, MatchCpuBF16) {
  REQUIRE_CUDA_DEVICE();
  kernels::OwnedCudaEnv env;
  for (const OpCase& c : AllOpCases()) MatchesCpu(c.type, DType::kBF16, env);
}

// Two runs of every kernel on the same inputs give the same bytes (no atomics, fixed trees).
TEST(CudaOps, RerunsAreBitIdentical) {
  REQUIRE_CUDA_DEVICE();
  Fixture& f = Shared();
  kernels::OwnedCudaEnv env;
  for (const OpCase& c : AllOpCases()) {
    Rng rng(0xB17 + std::hash<std::string>{}(c.type));
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int n = 0; n < 5; ++n) {
        const PairedInstance p = Pair(c.draw(rng), dtype, rng);
        const DType key = !p.gpu.inputs.empty() ? p.gpu.inputs[0].dtype : dtype;
        if (!f.cuda.Has({c.type, DeviceType::kCuda, key})) continue;
        const std::vector<Tensor> first = RunOnDevice(f.cuda, f.runner, p, env);
        const std::vector<Tensor> second = RunOnDevice(f.cuda, f.runner, p, env);
        ASSERT_EQ(first.size(), second.size());
        for (size_t o = 0; o < first.size(); ++o) {
          EXPECT_TRUE(BitEqual(first[o], second[o])) << c.type << " output " << o;
        }
      }
    }
  }
}

// Runs one hand-written instance on both sides in f32 (inputs from Tensor::Random).
void ExpectMatch(const OpInstance& instance) {
  Fixture& f = Shared();
  kernels::OwnedCudaEnv env;
  Rng rng(7);
  const PairedInstance p = Pair(instance, DType::kF32, rng);
  const std::vector<Tensor> want = f.runner.RunSingle(p.cpu, p.cpu_inputs);
  const std::vector<Tensor> got = RunOnDevice(f.cuda, f.runner, p, env);
  EXPECT_EQ(CompareWithTolerance(got, want, DType::kF32), "") << instance.type;
}

graph::TensorMeta F32Meta(Shape shape) { return {std::move(shape), DType::kF32}; }

// Zero-size tensors launch nothing (a zero grid is a CUDA error) and still write what the CPU
// writes: zeros for an empty contraction, -inf for an empty max, zero column sums.
TEST(CudaEmpty, ZeroSizedTensorsMatchCpu) {
  REQUIRE_CUDA_DEVICE();
  ExpectMatch({"add", {}, {F32Meta({0, 3}), F32Meta({3})}, {}, {}});
  ExpectMatch({"matmul", {}, {F32Meta({2, 0}), F32Meta({0, 3})}, {}, {}});
  ExpectMatch({"matmul", {}, {F32Meta({0, 4}), F32Meta({4, 3})}, {}, {}});
  ExpectMatch({"batch_matmul", {}, {F32Meta({0, 2, 4}), F32Meta({0, 4, 3})}, {}, {}});
  ExpectMatch({"reduce_sum", Attrs{{"axes", std::vector<int64_t>{1}}}, {F32Meta({3, 0})}, {}, {}});
  ExpectMatch({"reduce_max", Attrs{{"axes", std::vector<int64_t>{1}}}, {F32Meta({3, 0})}, {}, {}});
  ExpectMatch({"softmax", {}, {F32Meta({0, 4})}, {}, {}});
  ExpectMatch({"layer_norm_grad", {}, {F32Meta({0, 4}), F32Meta({4}), F32Meta({0, 4})}, {}, {}});
  ExpectMatch({"rms_norm_grad", {}, {F32Meta({0, 4}), F32Meta({4}), F32Meta({0, 4})}, {}, {}});
  ExpectMatch(
      {"transpose", Attrs{{"perm", std::vector<int64_t>{1, 0}}}, {F32Meta({0, 2})}, {}, {}});
  ExpectMatch({"relu", {}, {F32Meta({0})}, {}, {}});
}

// An id out of range cannot throw on the device: the kernel raises the env's error flag and
// the host turns it into a DeviceError naming the op after synchronising.
TEST(CudaFaults, OutOfRangeIdIsReportedAfterSync) {
  REQUIRE_CUDA_DEVICE();
  Fixture& f = Shared();
  kernels::OwnedCudaEnv env;
  OpInstance instance{"embedding", {}, {F32Meta({4, 3}), {Shape{2}, DType::kI32}}, {}, {}};
  instance.fill = {nullptr, [](Rng&) {
                     Tensor ids(Shape{2}, DType::kI32);
                     ids.SetDouble(0, 1);
                     ids.SetDouble(1, 9);  // the vocabulary has 4 rows
                     return ids;
                   }};
  Rng rng(3);
  const PairedInstance p = Pair(instance, DType::kF32, rng);
  try {
    RunOnDevice(f.cuda, f.runner, p, env);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("embedding"), std::string::npos) << e.what();
  }
  EXPECT_EQ(*env.env().error_flag_host, 0);  // cleared once reported
}

}  // namespace
}  // namespace twinflow::testing
