// Runs without a GPU: the CUDA registry has a kernel for every op type the CPU registry has
// one for, in f32, and in bf16, i32 and i64 wherever the CPU has those (the CPU computes bf16
// for every op but variables, updates and the gradient statistics, which stay f32).
#include <gtest/gtest.h>

#include <set>

#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"

namespace twinflow {
namespace {

TEST(CudaKernelCoverage, EveryCpuKernelHasACudaTwin) {
  const graph::OpRegistry ops = ops::BuiltinOps();
  const kernels::KernelRegistry cpu = kernels::CpuKernels();
  kernels::KernelRegistry cuda;
  kernels::RegisterCudaKernels(cuda);
  int checked = 0;
  for (const std::string& type : ops.Types()) {
    if (cpu.Has({type, DeviceType::kCpu, DType::kF32})) {
      EXPECT_TRUE(cuda.Has({type, DeviceType::kCuda, DType::kF32})) << type << " f32";
      ++checked;
    }
    for (DType dtype : {DType::kI32, DType::kI64, DType::kBF16}) {
      if (cpu.Has({type, DeviceType::kCpu, dtype})) {
        EXPECT_TRUE(cuda.Has({type, DeviceType::kCuda, dtype})) << type << " " << DTypeName(dtype);
      }
    }
  }
  EXPECT_GE(checked, 61);  // every op type but `input`
}

TEST(CudaKernelCoverage, KernelsWithoutAnEnvFailNamingTheOp) {
  kernels::KernelRegistry cuda;
  kernels::RegisterCudaKernels(cuda);
  Tensor x(Shape{2}, DType::kF32), y(Shape{2}, DType::kF32);
  const Attrs attrs;
  const kernels::KernelContext ctx = kernels::WholeTensorContext(attrs, {&x}, {&y});
  try {
    cuda.Find({"relu", DeviceType::kCuda, DType::kF32})(ctx);
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("relu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinflow
