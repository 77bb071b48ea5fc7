// The in-process collectives (runtime::ComputeCollective: region copies and reductions on the
// device, as a GPU runs them) give bit for bit what the reference collectives
// (sbp/collective_reference.h) give, for every kind, random group sizes, ranks, axes, uneven
// extents, dtypes and reduce ops, on a HostDevice, on a DeferredHostDevice (every operation
// queued and run later, as on a GPU) and on a device that reaches no member's memory (GPUs
// without peer access: the moves run on host copies). A member whose output register does not fit
// is refused with a ShapeError naming it.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <memory>
#include <vector>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/collective_compute.h"
#include "engine/runtime/host_device.h"
#include "engine/sbp/collective_reference.h"
#include "tests/support/deferred_device.h"

namespace twinflow::runtime {
namespace {

// A device whose kernels reach no member's memory, as a GPU without peer access to the others.
class UnreachingDevice : public HostDevice {
 public:
  UnreachingDevice() : HostDevice(0) {}
  bool Reaches(const Tensor&) override { return false; }
};

struct Case {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  plan::CollectiveDesc desc;
  ReduceOp op = ReduceOp::kSum;
  std::vector<Tensor> inputs;
};

// A random collective: inputs of one rank and dtype; members differ on the gather axis where
// the kind allows it (how uneven splits arrive).
Case DrawCase() {
  Case c;
  c.kind = *rc::gen::element(CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                             CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                             CollectiveKind::kBroadcast);
  c.op = *rc::gen::element(ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin);
  const DType dtype = *rc::gen::element(DType::kF32, DType::kBF16, DType::kI32, DType::kF64);
  const int members = *rc::gen::inRange(1, 6);
  const int rank = *rc::gen::inRange(1, 4);
  const int gather = *rc::gen::inRange(0, rank);
  const int scatter = *rc::gen::inRange(0, rank);
  c.desc.set_kind(plan::ToProto(c.kind));
  c.desc.set_gather_axis(gather);
  c.desc.set_scatter_axis(scatter);
  c.desc.set_root(*rc::gen::inRange(0, members));
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(*rc::gen::inRange<int64_t>(0, 7));
  const Shape shape(dims);
  const bool uneven = c.kind == CollectiveKind::kAllGather || c.kind == CollectiveKind::kAllToAll;
  Rng rng(*rc::gen::inRange<uint64_t>(0, uint64_t{1} << 40));
  for (int m = 0; m < members; ++m) {
    Shape s = shape;
    if (uneven) s[gather] = *rc::gen::inRange<int64_t>(0, 7);
    c.inputs.push_back(Tensor::Random(s, dtype, rng));
  }
  return c;
}

std::vector<Tensor> Reference(const Case& c) {
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      return sbp::AllReduce(c.inputs, c.op);
    case CollectiveKind::kAllGather:
      return sbp::AllGather(c.inputs, c.desc.gather_axis());
    case CollectiveKind::kReduceScatter:
      return sbp::ReduceScatter(c.inputs, c.op, c.desc.scatter_axis());
    case CollectiveKind::kAllToAll:
      return sbp::AllToAll(c.inputs, c.desc.scatter_axis(), c.desc.gather_axis());
    case CollectiveKind::kBroadcast:
      return std::vector<Tensor>(c.inputs.size(), c.inputs[c.desc.root()]);
  }
  return {};
}

// Runs the collective on `device` over copies of the inputs into outputs of `shapes`; returns
// the outputs (after the device's work has run).
std::vector<Tensor> Compute(Device& device, const Case& c, const std::vector<Shape>& shapes) {
  std::vector<Tensor> inputs = c.inputs;
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < shapes.size(); ++i) outputs.emplace_back(shapes[i], inputs[i].dtype());
  std::vector<CollectiveMember> members;
  for (size_t i = 0; i < inputs.size(); ++i) {
    members.push_back(
        CollectiveMember::Of(0, 0, static_cast<int>(i), inputs[i].AsView(), outputs[i].AsView()));
  }
  ComputeCollective(device, c.desc, c.op, members);
  device.Synchronize();
  return outputs;
}

TEST(CollectiveCompute, EqualsTheReferenceCollectivesBitForBit) {
  const bool ok = rc::check("in-process collectives equal the reference", [] {
    const Case c = DrawCase();
    const std::vector<Tensor> expected = Reference(c);
    std::vector<Shape> shapes;
    for (const Tensor& t : expected) shapes.push_back(t.shape());
    RC_TAG(CollectiveKindName(c.kind));
    HostDevice host(0);
    testing::DeferredHostDevice deferred(0);
    UnreachingDevice far;
    for (Device* device : std::initializer_list<Device*>{&host, &deferred, &far}) {
      const std::vector<Tensor> got = Compute(*device, c, shapes);
      for (size_t i = 0; i < got.size(); ++i) {
        RC_ASSERT(BitEqual(got[i], expected[i]));
      }
    }
  });
  EXPECT_TRUE(ok);
}

TEST(CollectiveCompute, InPlaceAllReduceSumsIntoTheInputs) {
  const bool ok = rc::check("an in-place all_reduce equals the reference", [] {
    const int members = *rc::gen::inRange(1, 5);
    const Shape shape{*rc::gen::inRange<int64_t>(0, 9), *rc::gen::inRange<int64_t>(1, 5)};
    Rng rng(*rc::gen::inRange<uint64_t>(0, 1000000));
    std::vector<Tensor> inputs;
    for (int m = 0; m < members; ++m) inputs.push_back(Tensor::Random(shape, DType::kF32, rng));
    const std::vector<Tensor> expected = sbp::AllReduce(inputs, ReduceOp::kSum);
    plan::CollectiveDesc desc;
    desc.set_kind(plan::ToProto(CollectiveKind::kAllReduce));
    desc.set_in_place(true);
    std::vector<CollectiveMember> list;
    for (int m = 0; m < members; ++m) {
      // Two views of one slot (copying a view would give an owning tensor).
      list.push_back(CollectiveMember::Of(0, 0, m, inputs[m].AsView(), inputs[m].AsView()));
    }
    HostDevice device(0);
    ComputeCollective(device, desc, ReduceOp::kSum, list);
    for (int m = 0; m < members; ++m) RC_ASSERT(BitEqual(inputs[m], expected[m]));
  });
  EXPECT_TRUE(ok);
}

// A bucket (several tensors per member) sums each tensor as an all_reduce of it alone would,
// in place or not; a member bringing another number of tensors is refused by name.
TEST(CollectiveCompute, ABucketSumsEachOfItsTensorsAsAlone) {
  const bool ok = rc::check("a bucket equals one all_reduce per tensor", [] {
    const int members = *rc::gen::inRange(1, 5);
    const int tensors = *rc::gen::inRange(2, 5);
    const bool in_place = *rc::gen::arbitrary<bool>();
    Rng rng(*rc::gen::inRange<uint64_t>(0, 1000000));
    std::vector<std::vector<Tensor>> inputs(tensors), outputs(tensors), expected;
    for (int k = 0; k < tensors; ++k) {
      const Shape shape{*rc::gen::inRange<int64_t>(0, 7), *rc::gen::inRange<int64_t>(1, 4)};
      for (int m = 0; m < members; ++m) {
        inputs[k].push_back(Tensor::Random(shape, DType::kF32, rng));
        outputs[k].emplace_back(shape, DType::kF32);
      }
      expected.push_back(sbp::AllReduce(inputs[k], ReduceOp::kSum));
    }
    plan::CollectiveDesc desc;
    desc.set_kind(plan::ToProto(CollectiveKind::kAllReduce));
    desc.set_in_place(in_place);
    std::vector<CollectiveMember> list;
    for (int m = 0; m < members; ++m) {
      list.push_back({0, 0, m, {}, nullptr});
      for (int k = 0; k < tensors; ++k) {
        Tensor& out = in_place ? inputs[k][m] : outputs[k][m];
        list.back().tensors.push_back({inputs[k][m].AsView(), out.AsView()});
      }
    }
    HostDevice device(0);
    ComputeCollective(device, desc, ReduceOp::kSum, list);
    for (int k = 0; k < tensors; ++k) {
      for (int m = 0; m < members; ++m)
        RC_ASSERT(BitEqual(in_place ? inputs[k][m] : outputs[k][m], expected[k][m]));
    }
    if (members == 1) return;
    list.back().tensors.pop_back();
    try {
      ComputeCollective(device, desc, ReduceOp::kSum, list);
      RC_FAIL("a member short of a tensor was accepted");
    } catch (const ShapeError& e) {
      RC_ASSERT(std::string(e.what()).find("member " + std::to_string(members - 1)) !=
                std::string::npos);
    }
  });
  EXPECT_TRUE(ok);
}

TEST(CollectiveCompute, AnOutputThatDoesNotFitIsRefusedByName) {
  const bool ok = rc::check("a misfit output is refused by name", [] {
    Case c = DrawCase();
    std::vector<Shape> shapes;
    for (const Tensor& t : Reference(c)) shapes.push_back(t.shape());
    const size_t bad = *rc::gen::inRange<size_t>(0, shapes.size());
    const int axis = *rc::gen::inRange(0, shapes[bad].rank());
    shapes[bad][axis] += 1;
    HostDevice device(0);
    try {
      Compute(device, c, shapes);
      RC_FAIL("no error");
    } catch (const ShapeError& e) {
      const std::string what = e.what();
      RC_ASSERT(what.find(CollectiveKindName(c.kind)) != std::string::npos);
      RC_ASSERT(what.find("member " + std::to_string(bad) + "'s output") != std::string::npos);
    }
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace twinflow::runtime
