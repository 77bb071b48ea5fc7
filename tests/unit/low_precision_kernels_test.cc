// bf16 and f16 on the CPU: every op case, drawn in f32, is run again with its floats in the
// 16-bit type (inputs rounded first, so both runs see the same values). The op infers 16-bit
// outputs, and they match the f32 run within the output's own rounding: the kernels compute
// in f32 between load and store (kernels/cpu/widened_kernels.cc).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/support/dtype_pair.h"
#include "tests/support/op_runner.h"

namespace twinflow::testing {
namespace {

constexpr int kInstancesPerOp = 6;

void MatchesF32(DType dtype) {
  const graph::OpRegistry ops = ops::BuiltinOps();
  const kernels::KernelRegistry cpu = kernels::CpuKernels();
  const OpRunner runner{ops, cpu};
  int compared = 0;
  for (const OpCase& c : AllOpCases()) {
    // Variables and optimizer updates hold fp32 master state (see the last test).
    if (!cpu.Has({c.type, DeviceType::kCpu, dtype})) continue;
    Rng rng(0x16B + std::hash<std::string>{}(c.type));
    for (int n = 0; n < kInstancesPerOp; ++n) {
      const PairedInstance p = Pair(c.draw(rng), dtype, rng);
      const auto want_metas = PairedOutputMetas(runner.OutputMetas(p.cpu), p);
      std::vector<Tensor> got;
      ASSERT_NO_THROW(got = runner.RunSingle(p.gpu, p.gpu_inputs)) << c.type;
      ASSERT_EQ(got.size(), want_metas.size()) << c.type;
      for (size_t o = 0; o < got.size(); ++o) {
        EXPECT_EQ(got[o].dtype(), want_metas[o].dtype) << c.type << " output " << o;
      }
      const std::string diff =
          CompareWithTolerance(got, runner.RunSingle(p.cpu, p.cpu_inputs), dtype);
      ASSERT_EQ(diff, "") << c.type << " " << DTypeName(dtype) << " instance " << n;
      ++compared;
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(LowPrecisionKernels, BF16MatchesF32) { MatchesF32(DType::kBF16); }
TEST(LowPrecisionKernels, F16MatchesF32) { MatchesF32(DType::kF16); }

// Optimizer updates keep fp32 master weights: the op refuses a 16-bit parameter by name.
TEST(LowPrecisionKernels, UpdatesRefuseSixteenBitParameters) {
  const graph::OpRegistry ops = ops::BuiltinOps();
  const kernels::KernelRegistry cpu = kernels::CpuKernels();
  const OpRunner runner{ops, cpu};
  OpInstance sgd;
  sgd.type = "sgd_update";
  sgd.attrs = Attrs{{"lr", 0.1}};
  sgd.inputs = {{Shape({4}), DType::kBF16}, {Shape({4}), DType::kBF16}};
  try {
    runner.OutputMetas(sgd);
    FAIL() << "a bf16 parameter was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be f32 or f64, got bf16"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(cpu.Has({"adam_update", DeviceType::kCpu, DType::kBF16}));
}

}  // namespace
}  // namespace twinflow::testing
