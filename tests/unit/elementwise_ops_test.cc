#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "tests/support/op_runner.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow {
namespace {

using graph::OpContext;
using graph::TensorMeta;

using testing::BuiltinRegistry;
using testing::CpuRegistry;
using testing::InferOp;
using testing::SignatureTexts;
using testing::Values;

// Runs the op on whole tensors, output shape and dtype from the op's inference.
Tensor RunOp(const std::string& type, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  testing::OpInstance instance{type, attrs, {}, {}, {}};
  for (const Tensor& t : inputs) instance.inputs.push_back({t.shape(), t.dtype()});
  return testing::OpRunner{BuiltinRegistry(), CpuRegistry()}.RunSingle(instance, inputs)[0];
}

const TensorMeta F32(Shape shape) { return {std::move(shape), DType::kF32}; }

TEST(ElementwiseOps, BroadcastsNumpyStyle) {
  EXPECT_EQ(InferOp("add", {}, {F32({3, 1, 4}), F32({5, 4})})[0].shape, (Shape{3, 5, 4}));
  EXPECT_EQ(InferOp("mul", {}, {F32({}), F32({2, 3})})[0].shape, (Shape{2, 3}));
  EXPECT_THROW(InferOp("sub", {}, {F32({3, 2}), F32({4})}), ShapeError);
  EXPECT_THROW(InferOp("add", {}, {F32({3}), {Shape{3}, DType::kI32}}), InvalidArgumentError);
  EXPECT_THROW(InferOp("div", {}, {{Shape{3}, DType::kI32}, {Shape{3}, DType::kI32}}),
               InvalidArgumentError);
  EXPECT_THROW(InferOp("add", {}, {F32({3})}), InvalidArgumentError);
  EXPECT_THROW(InferOp("bias_add", {}, {F32({2, 3}), F32({2})}), ShapeError);
  EXPECT_THROW(InferOp("bias_add", {{"axis", int64_t{2}}}, {F32({2, 3}), F32({3})}),
               InvalidArgumentError);
  EXPECT_THROW(InferOp("cast", {{"dtype", std::string("f33")}}, {F32({2})}), InvalidArgumentError);
  EXPECT_THROW(InferOp("scalar_mul", {}, {F32({2})}), InvalidArgumentError);
  EXPECT_THROW(InferOp("reduce_sum_like", {}, {F32({2, 3}), F32({2})}), ShapeError);
  try {
    InferOp("sub", {}, {F32({3, 2}), F32({4})});
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sub: shapes [3,2] and [4]"), std::string::npos);
  }
}

TEST(ElementwiseOps, BinaryKernelsBroadcast) {
  const Tensor a = Values({2, 1}, {1, 2});
  const Tensor b = Values({3}, {10, 20, 40});
  EXPECT_TRUE(BitEqual(RunOp("add", {}, {a, b}), Values({2, 3}, {11, 21, 41, 12, 22, 42})));
  EXPECT_TRUE(BitEqual(RunOp("sub", {}, {a, b}), Values({2, 3}, {-9, -19, -39, -8, -18, -38})));
  EXPECT_TRUE(BitEqual(RunOp("mul", {}, {b, a}), Values({2, 3}, {10, 20, 40, 20, 40, 80})));
  EXPECT_TRUE(BitEqual(RunOp("div", {}, {b, a}), Values({2, 3}, {10, 20, 40, 5, 10, 20})));
  // Integer arithmetic wraps instead of being undefined.
  const Tensor big = Values({1}, {std::numeric_limits<int32_t>::max()}, DType::kI32);
  const Tensor one = Values({1}, {1}, DType::kI32);
  EXPECT_EQ(RunOp("add", {}, {big, one}).GetDouble(0), std::numeric_limits<int32_t>::min());
}

TEST(ElementwiseOps, BiasAddAndItsGradient) {
  const Tensor x = Values({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(BitEqual(RunOp("bias_add", {{"axis", int64_t{0}}}, {x, Values({2}, {10, 20})}),
                       Values({2, 3}, {11, 12, 13, 24, 25, 26})));
  EXPECT_TRUE(BitEqual(RunOp("bias_add", {}, {x, Values({3}, {1, 0, -1})}),
                       Values({2, 3}, {2, 2, 2, 5, 5, 5})));
  EXPECT_TRUE(
      BitEqual(RunOp("bias_add_grad", {{"axis", int64_t{-1}}}, {x}), Values({3}, {5, 7, 9})));
  EXPECT_TRUE(BitEqual(RunOp("bias_add_grad", {{"axis", int64_t{0}}}, {x}), Values({2}, {6, 15})));
}

TEST(ElementwiseOps, ReduceSumLikeAndBroadcastLike) {
  const Tensor dy = Values({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      BitEqual(RunOp("reduce_sum_like", {}, {dy, Values({3}, {0, 0, 0})}), Values({3}, {5, 7, 9})));
  EXPECT_TRUE(BitEqual(RunOp("reduce_sum_like", {}, {dy, Values({2, 1}, {0, 0})}),
                       Values({2, 1}, {6, 15})));
  EXPECT_TRUE(BitEqual(RunOp("reduce_sum_like", {}, {dy, Values({}, {0})}), Values({}, {21})));
  EXPECT_TRUE(BitEqual(RunOp("broadcast_like", {}, {Values({2, 1}, {1, 2}), dy}),
                       Values({2, 3}, {1, 1, 1, 2, 2, 2})));
}

TEST(ElementwiseOps, ScalarOpsAndCasts) {
  const Tensor x = Values({3}, {-1.5, 0.5, 2});
  EXPECT_TRUE(BitEqual(RunOp("scalar_add", {{"value", 1.0}}, {x}), Values({3}, {-0.5, 1.5, 3})));
  EXPECT_TRUE(BitEqual(RunOp("scalar_mul", {{"value", -2.0}}, {x}), Values({3}, {3, -1, -4})));
  EXPECT_TRUE(
      BitEqual(RunOp("scalar_pow", {{"exponent", 2.0}}, {x}), Values({3}, {2.25, 0.25, 4})));
  EXPECT_TRUE(BitEqual(RunOp("identity", {}, {x}), x));
  const Tensor odd = Values({4}, {-1.5, 2.7, 1e20, std::nan("")});
  EXPECT_TRUE(BitEqual(RunOp("cast", {{"dtype", std::string("i32")}}, {odd}),
                       Values({4}, {-1, 2, std::numeric_limits<int32_t>::max(), 0}, DType::kI32)));
  const Tensor wide = Values({1}, {double(int64_t{1} << 32) + 5}, DType::kI64);
  EXPECT_EQ(RunOp("cast", {{"dtype", std::string("i32")}}, {wide}).GetDouble(0), 5);
  EXPECT_TRUE(BitEqual(RunOp("cast", {{"dtype", std::string("f64")}}, {x}),
                       Values({3}, {-1.5, 0.5, 2}, DType::kF64)));
  EXPECT_EQ(RunOp("cast", {{"dtype", std::string("bf16")}}, {x}).GetDouble(2), 2.0);
}

TEST(ElementwiseOps, ListsSignaturesForABroadcastAdd) {
  EXPECT_EQ(
      SignatureTexts("add", {}, {F32({3, 1, 4}), F32({5, 4})}),
      (std::vector<std::string>{"S(0),B -> S(0)", "B,S(0) -> S(1)", "S(2),S(1) -> S(2)", "B,B -> B",
                                "P,P -> P", "P(max),B -> P(max)", "B,P(max) -> P(max)",
                                "P(min),B -> P(min)", "B,P(min) -> P(min)"}));
  const auto mul = SignatureTexts("mul", {}, {F32({4}), F32({4})});
  EXPECT_EQ(mul,
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "B,B -> B", "P,B -> P", "B,P -> P"}));
  EXPECT_EQ(SignatureTexts("div", {}, {F32({4}), F32({4})}).back(), "P,B -> P");
  EXPECT_EQ(SignatureTexts("bias_add", {{"axis", int64_t{1}}}, {F32({2, 3}), F32({3})})[1],
            "S(1),S(0) -> S(1)");
  EXPECT_EQ(SignatureTexts("reduce_sum_like", {}, {F32({2, 3}), F32({3})}),
            (std::vector<std::string>{"S(0),B -> P", "S(1),S(0) -> S(0)", "P,B -> P", "B,B -> B",
                                      "P,P -> P", "B,P -> B"}));
  // scalar_add is not linear; casting a partial sum to an integer truncates each part.
  for (const auto& s : SignatureTexts("scalar_add", {{"value", 1.0}}, {F32({4})})) {
    EXPECT_NE(s, "P -> P");
  }
  for (const auto& s : SignatureTexts("cast", {{"dtype", std::string("i32")}}, {F32({4})})) {
    EXPECT_NE(s, "P -> P");
  }
}

// The shared cases are float-only (the gradient check needs float outputs), so the integer
// kernels and the integer-specific rules are checked here the same way the property test does.
TEST(ElementwiseOps, IntegerInstancesHonourEverySignature) {
  const testing::OpRunner runner{BuiltinRegistry(), CpuRegistry()};
  const TensorMeta i32{Shape{5, 3}, DType::kI32};
  const TensorMeta i64{Shape{3}, DType::kI64};
  const auto inst = [](std::string type, Attrs attrs, std::vector<TensorMeta> inputs) {
    return testing::OpInstance{std::move(type), std::move(attrs), std::move(inputs), {}, {}};
  };
  const std::vector<testing::OpInstance> instances = {
      inst("add", {}, {i32, {Shape{1, 3}, DType::kI32}}),
      inst("sub", {}, {{Shape{3}, DType::kI64}, {Shape{4, 1}, DType::kI64}}),
      inst("mul", {}, {i32, i32}),
      inst("bias_add", {{"axis", int64_t{0}}}, {i32, {Shape{5}, DType::kI32}}),
      inst("bias_add_grad", {{"axis", int64_t{1}}}, {i32}),
      inst("reduce_sum_like", {}, {i32, {Shape{5, 1}, DType::kI32}}),
      inst("broadcast_like", {}, {i64, {Shape{2, 3}, DType::kI64}}),
      inst("scalar_mul", {{"value", 3.0}}, {i32}),
      inst("scalar_mul", {{"value", -0.5}}, {i32}),
      inst("scalar_add", {{"value", 2.5}}, {i64}),
      inst("identity", {}, {{Shape{5, 3}, DType::kBF16}}),
      inst("cast", {{"dtype", std::string("i32")}}, {F32({5, 3})}),
      inst("cast", {{"dtype", std::string("i64")}}, {i32}),
      inst("cast", {{"dtype", std::string("i32")}}, {i64}),
      inst("cast", {{"dtype", std::string("bf16")}}, {F32({5, 3})}),
      inst("cast", {{"dtype", std::string("f32")}}, {{Shape{5, 3}, DType::kBF16}}),
      inst("cast", {{"dtype", std::string("f64")}}, {i64}),
  };
  Rng rng(11);
  for (const auto& instance : instances) {
    for (const Shape& mesh : {Shape{2}, Shape{3}, Shape{2, 2}}) {
      std::vector<int64_t> ids(mesh.numel());
      for (int64_t d = 0; d < mesh.numel(); ++d) ids[d] = d;
      const sbp::Placement placement(DeviceType::kCpu, ids, mesh);
      const OpContext ctx{instance.type, instance.attrs, instance.inputs};
      for (int trial = 0; trial < 3; ++trial) {
        std::vector<Tensor> inputs;
        for (const auto& meta : instance.inputs) {
          // Casts of floats to integers must see fractions and out-of-range values.
          Tensor t = Tensor::Random(meta.shape, meta.dtype, rng);
          if (IsFloating(meta.dtype)) {
            for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, t.GetDouble(i) * 1e3);
          }
          inputs.push_back(std::move(t));
        }
        const auto want = runner.RunSingle(instance, inputs);
        for (const auto& sig :
             graph::NdSignatures(BuiltinRegistry().Find(instance.type), ctx, mesh)) {
          const auto got = runner.RunDistributed(instance, inputs, sig, placement, rng);
          EXPECT_EQ(testing::CompareOutputs(got, want, mesh.numel()), "")
              << instance.type << " " << instance.attrs.ToString() << " "
              << instance.inputs[0].ToString() << " under " << sig.ToString();
        }
      }
    }
  }
}

TEST(ElementwiseOps, GradientsReduceBackToInputShapes) {
  for (const std::string type : {"add", "sub", "mul", "div"}) {
    graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
    const auto a = builder.Input("a", Shape{3, 1, 4});
    const auto b = builder.Input("b", Shape{5, 4});
    const auto y = builder.Add1(type, {a, b});
    const auto dy = builder.Input("dy", builder.meta(y).shape);
    const graph::OpNode node = builder.graph().op(builder.graph().tensor(y).producer);
    const auto grads = BuiltinRegistry().Find(type).gradient(builder, node, {dy});
    EXPECT_EQ(builder.meta(*grads[0]).shape, (Shape{3, 1, 4})) << type;
    EXPECT_EQ(builder.meta(*grads[1]).shape, (Shape{5, 4})) << type;
  }
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const auto x = builder.Input("x", Shape{2, 3, 4});
  const auto bias = builder.Input("bias", Shape{3});
  const auto y = builder.Add1("bias_add", {x, bias}, {{"axis", int64_t{1}}});
  const graph::OpNode node = builder.graph().op(builder.graph().tensor(y).producer);
  const auto grads = BuiltinRegistry().Find("bias_add").gradient(builder, node, {y});
  EXPECT_EQ(builder.meta(*grads[1]).shape, (Shape{3}));
  const auto i = builder.Input("i", Shape{2}, DType::kI32);
  const auto c = builder.Add1("cast", {i}, {{"dtype", std::string("f32")}});
  const graph::OpNode cast = builder.graph().op(builder.graph().tensor(c).producer);
  EXPECT_FALSE(BuiltinRegistry().Find("cast").gradient(builder, cast, {c})[0].has_value());
}

}  // namespace
}  // namespace twinflow
