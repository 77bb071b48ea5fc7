// The shape op family: inference errors, hand-computed kernels, signatures of known cases,
// gradient ops, and a deterministic sweep of every declared signature of the shape and misc
// ops against the single-device result (on registries holding only these two families, so
// the check runs whatever state the other families are in).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "kernels/cpu/kernel_families.h"
#include "tests/support/op_runner.h"

namespace twinflow::ops {
namespace {

using graph::OpContext;
using graph::SbpSignature;
using graph::TensorMeta;

graph::OpRegistry MyOps() {
  graph::OpRegistry registry;
  RegisterShapeOps(registry);
  RegisterMiscOps(registry);
  return registry;
}

kernels::KernelRegistry MyKernels() {
  kernels::KernelRegistry registry;
  kernels::RegisterShapeKernels(registry);
  kernels::RegisterMiscKernels(registry);
  return registry;
}

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = MyOps();
  return registry;
}

TensorMeta F32(Shape shape) { return TensorMeta{std::move(shape), DType::kF32}; }

std::vector<TensorMeta> Infer(const std::string& type, const Attrs& attrs,
                              const std::vector<TensorMeta>& inputs) {
  return Ops().Find(type).infer(OpContext{type, attrs, inputs});
}

std::vector<std::string> Sigs(const std::string& type, const Attrs& attrs,
                              const std::vector<TensorMeta>& inputs, int64_t parts) {
  std::vector<std::string> out;
  for (const SbpSignature& s : Ops().Find(type).signatures(OpContext{type, attrs, inputs}, parts)) {
    out.push_back(s.ToString());
  }
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Tensor Iota(Shape shape) {
  Tensor t(std::move(shape), DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetDouble(i));
  return v;
}

Tensor RunOp(const std::string& type, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  static const kernels::KernelRegistry kernels = MyKernels();
  testing::OpInstance instance{type, attrs, {}, {}, {}};
  for (const Tensor& t : inputs) instance.inputs.push_back(TensorMeta{t.shape(), t.dtype()});
  return testing::OpRunner{Ops(), kernels}.RunSingle(instance, inputs).at(0);
}

TEST(ShapeOps, ReshapeInfersAndRejects) {
  EXPECT_EQ(Infer("reshape", {{"shape", std::vector<int64_t>{3, -1}}}, {F32({2, 6})})[0].shape,
            Shape({3, 4}));
  EXPECT_THROW(Infer("reshape", {{"shape", std::vector<int64_t>{5}}}, {F32({2, 3})}), ShapeError);
  EXPECT_THROW(Infer("reshape", {{"shape", std::vector<int64_t>{-1, -1}}}, {F32({2, 3})}),
               InvalidArgumentError);
  EXPECT_THROW(Infer("reshape", {}, {F32({2, 3})}), InvalidArgumentError);
}

TEST(ShapeOps, ReshapeSignaturesFollowContiguousBlocks) {
  // [2,3,12] -> [2,3,4,3]: batch, sequence and (4 heads over 2 parts) the heads split carry
  // over.
  const Attrs heads{{"shape", std::vector<int64_t>{2, 3, 4, 3}}};
  const auto two = Sigs("reshape", heads, {F32({2, 3, 12})}, 2);
  EXPECT_TRUE(Contains(two, "S(0) -> S(0)"));
  EXPECT_TRUE(Contains(two, "S(1) -> S(1)"));
  EXPECT_TRUE(Contains(two, "S(2) -> S(2)"));
  EXPECT_TRUE(Contains(two, "P -> P"));
  EXPECT_TRUE(Contains(two, "B -> B"));
  EXPECT_FALSE(Contains(two, "S(2) -> S(3)"));
  // 3 parts cannot split 4 heads the way they split 12 columns.
  EXPECT_FALSE(Contains(Sigs("reshape", heads, {F32({2, 3, 12})}, 3), "S(2) -> S(2)"));
  // reshape is told the whole mesh's device count: 2 heads split over 2 devices carry over,
  // but on 4 devices (say a [2,2] mesh splitting the axis twice) they would not.
  const Attrs two_heads{{"shape", std::vector<int64_t>{2, 3, 2, 3}}};
  EXPECT_TRUE(Contains(Sigs("reshape", two_heads, {F32({2, 3, 6})}, 2), "S(2) -> S(2)"));
  EXPECT_FALSE(Contains(Sigs("reshape", two_heads, {F32({2, 3, 6})}, 4), "S(2) -> S(2)"));
  // Flattening [4,3] keeps a split of rows only where the parts are whole rows.
  const Attrs flat{{"shape", std::vector<int64_t>{12}}};
  EXPECT_TRUE(Contains(Sigs("reshape", flat, {F32({4, 3})}, 2), "S(0) -> S(0)"));
  EXPECT_FALSE(Contains(Sigs("reshape", {{"shape", std::vector<int64_t>{15}}}, {F32({5, 3})}, 2),
                        "S(0) -> S(0)"));
  EXPECT_FALSE(Contains(Sigs("reshape", flat, {F32({4, 3})}, 2), "S(1) -> S(0)"));
}

// [2 * 8, 4] -> [2, 8, 4] on a [2, 2] mesh: splitting the tokens over both axes is splitting
// the batch over the first and, each part then one sequence, the sequence over the second. No
// one logical rule sees it (the token axis split in 4 is not the batch split in 4); the nested
// signatures check each axis on the shapes the one before leaves, and the result is exact.
TEST(ShapeOps, NestedReshapeSplitsFollowThePhysicalShapes) {
  const kernels::KernelRegistry kernels = MyKernels();
  const testing::OpRunner runner{Ops(), kernels};
  testing::OpInstance instance;
  instance.type = "reshape";
  instance.attrs = Attrs{{"shape", std::vector<int64_t>{2, 8, 4}}};
  instance.inputs = {F32({16, 4})};
  const Shape mesh{2, 2};
  const auto all = graph::NdSignatures(
      Ops().Find("reshape"), OpContext{instance.type, instance.attrs, instance.inputs}, mesh);
  const auto nested = std::find_if(all.begin(), all.end(), [](const graph::NdSbpSignature& sig) {
    return sig.ToString() == "(S(0),S(0)) -> (S(0),S(1))";
  });
  ASSERT_NE(nested, all.end());
  Rng rng(7);
  const std::vector<Tensor> inputs = {Tensor::Random(Shape{16, 4}, DType::kF32, rng)};
  const sbp::Placement placement(DeviceType::kCpu, {0, 1, 2, 3}, mesh);
  const std::vector<Tensor> got = runner.RunDistributed(instance, inputs, *nested, placement, rng);
  EXPECT_EQ(testing::CompareOutputs(got, runner.RunSingle(instance, inputs), 4), "");
  // Two sequences a replica: the token split over tp is no sequence split.
  instance.attrs = Attrs{{"shape", std::vector<int64_t>{4, 4, 4}}};
  for (const graph::NdSbpSignature& sig :
       graph::NdSignatures(Ops().Find("reshape"),
                           OpContext{instance.type, instance.attrs, instance.inputs}, mesh)) {
    EXPECT_NE(sig.ToString(), "(S(0),S(0)) -> (S(0),S(1))");
  }
}

TEST(ShapeOps, TransposeKernelAndSignatures) {
  const Attrs attrs{{"perm", std::vector<int64_t>{1, 0}}};
  EXPECT_EQ(Values(RunOp("transpose", attrs, {Iota({2, 3})})),
            (std::vector<double>{0, 3, 1, 4, 2, 5}));
  const Attrs perm3{{"perm", std::vector<int64_t>{2, 0, 1}}};
  const Tensor t = RunOp("transpose", perm3, {Iota({2, 3, 4})});
  EXPECT_EQ(t.shape(), Shape({4, 2, 3}));
  EXPECT_EQ(t.GetDouble(1 * 6 + 1 * 3 + 2), 1 * 12 + 2 * 4 + 1);  // out[1,1,2] = in[1,2,1]
  EXPECT_EQ(Sigs("transpose", perm3, {F32({2, 3, 4})}, 2),
            (std::vector<std::string>{"S(0) -> S(1)", "S(1) -> S(2)", "S(2) -> S(0)", "P -> P",
                                      "B -> B"}));
  EXPECT_THROW(Infer("transpose", {{"perm", std::vector<int64_t>{0, 0}}}, {F32({2, 2})}),
               InvalidArgumentError);
}

TEST(ShapeOps, SliceAndSliceGrad) {
  const Attrs attrs{{"begin", std::vector<int64_t>{0, 1}}, {"end", std::vector<int64_t>{2, 3}}};
  EXPECT_EQ(Values(RunOp("slice", attrs, {Iota({2, 4})})), (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(Sigs("slice", attrs, {F32({2, 4})}, 2),
            (std::vector<std::string>{"S(0) -> S(0)", "P -> P", "B -> B"}));
  EXPECT_THROW(
      Infer("slice", {{"begin", std::vector<int64_t>{0, 3}}, {"end", std::vector<int64_t>{2, 5}}},
            {F32({2, 4})}),
      ShapeError);
  Attrs grad = attrs;
  grad.Set("shape", std::vector<int64_t>{2, 4});
  EXPECT_EQ(Values(RunOp("slice_grad", grad, {Iota({2, 2})})),
            (std::vector<double>{0, 0, 1, 0, 0, 2, 3, 0}));
  EXPECT_THROW(Infer("slice_grad", grad, {F32({2, 3})}), ShapeError);
}

TEST(ShapeOps, ConcatKernelAndErrors) {
  const Attrs axis1{{"axis", int64_t{1}}};
  EXPECT_EQ(Values(RunOp("concat", axis1, {Iota({2, 1}), Iota({2, 2})})),
            (std::vector<double>{0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(Sigs("concat", axis1, {F32({2, 1}), F32({2, 2})}, 2),
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "P,P -> P", "B,B -> B"}));
  EXPECT_THROW(Infer("concat", axis1, {F32({2, 1}), F32({3, 2})}), ShapeError);
  EXPECT_THROW(Infer("concat", {{"axis", int64_t{2}}}, {F32({2, 1})}), InvalidArgumentError);
}

TEST(ShapeOps, GradientsHaveTheInputShapes) {
  graph::GraphBuilder b(Ops(), sbp::Placement(DeviceType::kCpu, {0}));
  const auto x = b.Input("x", Shape{2, 6}, DType::kF32);
  const auto y = b.Input("y", Shape{2, 3}, DType::kF32);
  const auto r = b.Add1("reshape", {x}, {{"shape", std::vector<int64_t>{3, 4}}});
  const auto t = b.Add1("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  const auto s = b.Add1(
      "slice", {x}, {{"begin", std::vector<int64_t>{1, 2}}, {"end", std::vector<int64_t>{2, 5}}});
  const auto c = b.Add1("concat", {x, y}, {{"axis", int64_t{1}}});
  for (graph::TensorId out : {r, t, s, c}) {
    const graph::OpNode op = b.graph().op(b.graph().tensor(out).producer);
    const auto dx = Ops().Find(op.type).gradient(b, op, {out});
    ASSERT_EQ(dx.size(), op.inputs.size()) << op.type;
    for (size_t i = 0; i < dx.size(); ++i) {
      ASSERT_TRUE(dx[i].has_value()) << op.type;
      EXPECT_EQ(b.meta(*dx[i]), b.meta(op.inputs[i])) << op.type;
    }
  }
}

// Every declared 1-D and 2-D signature of every shape and misc op, on drawn instances.
TEST(ShapeAndMiscOps, DeclaredSignaturesMatchTheSingleDeviceResult) {
  const kernels::KernelRegistry kernels = MyKernels();
  const testing::OpRunner runner{Ops(), kernels};
  const std::vector<Shape> meshes = {Shape{2},    Shape{3},    Shape{4},
                                     Shape{2, 2}, Shape{2, 3}, Shape{3, 2}};
  std::vector<testing::OpCase> cases = testing::ShapeCases();
  for (testing::OpCase& c : testing::MiscCases()) cases.push_back(std::move(c));
  Rng rng(12345);
  for (const testing::OpCase& c : cases) {
    for (int trial = 0; trial < 200; ++trial) {
      const testing::OpInstance instance = c.draw(rng);
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < instance.inputs.size(); ++i) {
        inputs.push_back(testing::FillInput(instance, static_cast<int>(i), rng));
      }
      const std::vector<Tensor> want = runner.RunSingle(instance, inputs);
      const Shape& mesh = meshes[trial % meshes.size()];
      std::vector<int64_t> ids(mesh.numel());
      for (size_t d = 0; d < ids.size(); ++d) ids[d] = static_cast<int64_t>(d);
      const sbp::Placement placement(DeviceType::kCpu, ids, mesh);
      const OpContext ctx{instance.type, instance.attrs, instance.inputs};
      const auto signatures = graph::NdSignatures(Ops().Find(instance.type), ctx, mesh);
      ASSERT_FALSE(signatures.empty()) << instance.type;
      for (const graph::NdSbpSignature& sig : signatures) {
        const std::string where = instance.type + " " + instance.attrs.ToString() + " " +
                                  (instance.inputs.empty() ? "" : instance.inputs[0].ToString()) +
                                  " on " + placement.ToString() + " under " + sig.ToString();
        std::vector<Tensor> got;
        try {
          got = runner.RunDistributed(instance, inputs, sig, placement, rng);
        } catch (const Error& e) {
          FAIL() << where << ": " << e.what();
        }
        const std::string mismatch = testing::CompareOutputs(got, want, mesh.numel());
        ASSERT_TRUE(mismatch.empty()) << where << ": " << mismatch;
      }
    }
  }
}

}  // namespace
}  // namespace twinflow::ops
