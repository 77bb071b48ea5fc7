// The simulator's cost of an in-process collective among logical devices sharing a GPU
// (sim::InMemoryCollectiveCost) is what the runtime's ComputeCollective really does: the same
// bytes read and written and the same kernels launched, counted on a device that tallies them.
#include "simulator/shared_devices.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/core/rng.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/collective_compute.h"
#include "engine/runtime/host_device.h"

namespace twinflow::sim {
namespace {

// A HostDevice that counts the bytes its copies and reductions move (a copy reads and writes
// each byte, a reduction reads its destination too) and the moves themselves.
class CountingDevice : public runtime::HostDevice {
 public:
  CountingDevice() : HostDevice(0) {}
  void Copy(const Tensor& src, Tensor& dst) override {
    Count(2.0 * static_cast<double>(src.nbytes()));
    HostDevice::Copy(src, dst);
  }
  void CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) override {
    Count(2.0 * static_cast<double>(from.numel() * DTypeSize(src.dtype())));
    HostDevice::CopyRegion(src, from, dst, to);
  }
  void ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) override {
    Count(3.0 * static_cast<double>(src.nbytes()));
    HostDevice::ReduceInto(src, dst, op);
  }
  void ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                    ReduceOp op) override {
    Count(3.0 * static_cast<double>(from.numel() * DTypeSize(src.dtype())));
    HostDevice::ReduceRegion(src, from, dst, to, op);
  }
  double bytes = 0;
  int64_t moves = 0;

 private:
  void Count(double b) {
    bytes += b;
    ++moves;
  }
};

// Runs `kind` over `p` members of f32[rows, 12] inputs (rows a multiple of p, as the Plan's
// equal slots) on a CountingDevice; returns it with the collective's `bytes` for the cost
// (the input's; all_gather's output).
CountingDevice Count(CollectiveKind kind, int p, int64_t rows, bool in_place, int64_t* bytes) {
  plan::CollectiveDesc desc;
  desc.set_kind(plan::ToProto(kind));
  desc.set_gather_axis(0);
  desc.set_scatter_axis(1);  // 12 columns split over up to 4 members
  const Shape in{rows, 12};
  Shape out = in;
  if (kind == CollectiveKind::kAllGather) out = Shape{rows * p, 12};
  if (kind == CollectiveKind::kReduceScatter) out = Shape{rows, 12 / p};
  if (kind == CollectiveKind::kAllToAll) out = Shape{rows * p, 12 / p};
  Rng rng(7);
  std::vector<Tensor> inputs, outputs;
  for (int m = 0; m < p; ++m) {
    inputs.push_back(Tensor::Random(in, DType::kF32, rng));
    outputs.emplace_back(out, DType::kF32);
  }
  std::vector<runtime::CollectiveMember> members;
  for (int m = 0; m < p; ++m) {
    Tensor& o = in_place ? inputs[m] : outputs[m];
    members.push_back(runtime::CollectiveMember::Of(0, 0, m, inputs[m].AsView(), o.AsView()));
  }
  CountingDevice device;
  runtime::ComputeCollective(device, desc, ReduceOp::kSum, members);
  *bytes = (kind == CollectiveKind::kAllGather ? out.numel() : in.numel()) * 4;
  return device;
}

TEST(SharedDevices, InMemoryCollectiveCostIsWhatTheRuntimeMoves) {
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kBroadcast}) {
    for (int p : {1, 2, 3, 4}) {
      for (bool in_place : {false, true}) {
        if (in_place && kind != CollectiveKind::kAllReduce) continue;
        int64_t bytes = 0;
        const CountingDevice counted = Count(kind, p, 6, in_place, &bytes);
        const InMemoryCollective cost = InMemoryCollectiveCost(kind, p, bytes, in_place);
        EXPECT_DOUBLE_EQ(cost.bytes, counted.bytes)
            << CollectiveKindName(kind) << " p=" << p << (in_place ? " in place" : "");
        EXPECT_EQ(cost.moves, counted.moves)
            << CollectiveKindName(kind) << " p=" << p << (in_place ? " in place" : "");
      }
    }
  }
}

}  // namespace
}  // namespace twinflow::sim
