// The CUDA device's own operations on a GPU, as the runtime uses them: in-process collectives
// among logical devices sharing one GPU (region copies and reductions as kernels, equal bit for
// bit to the reference collectives), and matmuls on operands at the Plan's slot alignment
// (64 bytes), not cudaMalloc's 256, against the CPU kernel.
#include "engine/runtime/cuda/cuda_device.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/core/collective_kind.h"
#include "engine/core/rng.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/collective_compute.h"
#include "engine/sbp/collective_reference.h"
#include "kernels/builtin_kernels.h"
#include "tests/gpu/gpu_op_harness.h"

namespace twinflow::testing {
namespace {

// `count` logical devices on GPU 0, each with an arena of `bytes`.
struct LogicalDevices {
  LogicalDevices(int count, int64_t bytes) {
    for (int i = 0; i < count; ++i) {
      devices.push_back(std::make_unique<runtime::CudaDevice>(
          i, runtime::DevicePlace{0, 0, 1}));  // every one on GPU 0
      arenas.push_back(devices.back()->AllocateArena(bytes));
    }
  }
  std::vector<std::unique_ptr<runtime::CudaDevice>> devices;
  std::vector<std::byte*> arenas;
};

TEST(CudaDevice, InProcessCollectivesOnOneGpuEqualTheReference) {
  REQUIRE_CUDA_DEVICE();
  const int p = 3;
  LogicalDevices logical(p, 1 << 20);
  Rng rng(11);
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kBroadcast}) {
    for (DType dtype : {DType::kF32, DType::kI32}) {
      std::vector<Tensor> inputs;  // [7, 9]: uneven parts over 3 members on either axis
      for (int m = 0; m < p; ++m) inputs.push_back(Tensor::Random(Shape{7, 9}, dtype, rng));
      std::vector<Tensor> want;
      switch (kind) {
        case CollectiveKind::kAllReduce:
          want = sbp::AllReduce(inputs, ReduceOp::kSum);
          break;
        case CollectiveKind::kAllGather:
          want = sbp::AllGather(inputs, 1);
          break;
        case CollectiveKind::kReduceScatter:
          want = sbp::ReduceScatter(inputs, ReduceOp::kSum, 0);
          break;
        case CollectiveKind::kAllToAll:
          want = sbp::AllToAll(inputs, 0, 1);
          break;
        case CollectiveKind::kBroadcast:
          want = std::vector<Tensor>(p, inputs[1]);
          break;
      }
      plan::CollectiveDesc desc;
      desc.set_kind(plan::ToProto(kind));
      desc.set_gather_axis(1);
      desc.set_scatter_axis(0);
      desc.set_root(1);
      std::vector<runtime::CollectiveMember> members;
      for (int m = 0; m < p; ++m) {  // input at the arena's start, output 64 bytes past it
        Tensor in = Tensor::View(inputs[m].shape(), dtype, logical.arenas[m]);
        Tensor out = Tensor::View(want[m].shape(), dtype, logical.arenas[m] + 4096 + 64);
        logical.devices[m]->Upload(inputs[m], in);
        logical.devices[m]->Synchronize();
        members.push_back(runtime::CollectiveMember::Of(0, m, m, std::move(in), std::move(out)));
      }
      runtime::ComputeCollective(*logical.devices[p - 1], desc, ReduceOp::kSum, members);
      for (int m = 0; m < p; ++m) {
        const Tensor got = logical.devices[p - 1]->Download(members[m].one().output);
        EXPECT_TRUE(BitEqual(got, want[m]))
            << CollectiveKindName(kind) << " " << DTypeName(dtype) << " member " << m;
      }
    }
  }
}

TEST(CudaDevice, MatmulOnSlotAlignedOperandsMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  LogicalDevices logical(1, 1 << 20);
  runtime::CudaDevice& device = *logical.devices[0];
  const kernels::KernelRegistry registry = kernels::BuiltinKernels();
  Rng rng(5);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const Tensor a = Tensor::Random(Shape{33, 40}, dtype, rng);
    const Tensor b = Tensor::Random(Shape{40, 24}, dtype, rng);
    // The reference in f32 from the same (exactly widened) values.
    const auto widened = [](const Tensor& t) {
      Tensor f(t.shape(), DType::kF32);
      for (int64_t i = 0; i < t.numel(); ++i) f.SetDouble(i, t.GetDouble(i));
      return f;
    };
    const Tensor a32 = widened(a), b32 = widened(b);
    Tensor want(Shape{33, 24}, DType::kF32);
    const Attrs attrs;
    kernels::KernelContext cpu = kernels::WholeTensorContext(attrs, {&a32, &b32}, {&want});
    registry.Find({"matmul", DeviceType::kCpu, DType::kF32})(cpu);
    // 64 bytes past 256-byte boundaries, as slots are placed in an arena.
    Tensor da = Tensor::View(a.shape(), dtype, logical.arenas[0] + 64);
    Tensor db = Tensor::View(b.shape(), dtype, logical.arenas[0] + 8192 + 64);
    Tensor dc = Tensor::View(want.shape(), dtype, logical.arenas[0] + 16384 + 192);
    device.Upload(a, da);
    device.Upload(b, db);
    kernels::KernelContext ctx = kernels::WholeTensorContext(attrs, {&da, &db}, {&dc});
    device.RunKernel(registry.Find({"matmul", DeviceType::kCuda, dtype}), ctx);
    const Tensor got = device.Download(dc);
    EXPECT_EQ(CompareWithTolerance({got}, {want}, dtype), "") << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace twinflow::testing
