// KernelRegistry, WholeTensorContext and the ReferenceInterpreter, with test-local op types
// and kernels so that they are checked apart from the op library.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "engine/interpreter/reference_interpreter.h"
#include "kernels/kernel.h"

namespace twinflow::interpreter {
namespace {

using graph::OpContext;
using graph::OpDef;
using graph::TensorId;
using graph::TensorMeta;
using kernels::KernelContext;
using kernels::KernelKey;

template <typename E, typename F>
std::string ErrorText(F fn) {
  try {
    fn();
  } catch (const E& e) {
    // Compare what follows the "<Kind> error: " prefix.
    const std::string text = e.what();
    const size_t colon = text.find(" error: ");
    return colon == std::string::npos ? text : text.substr(colon + 8);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

graph::OpRegistry TestOps() {
  graph::OpRegistry registry;
  OpDef source;
  source.min_inputs = source.max_inputs = 0;
  source.role = graph::OpRole::kInput;  // "variable" too: the interpreter only asks is_source()
  source.infer = [](const OpContext& ctx) {
    return std::vector<TensorMeta>{
        {Shape(ctx.attrs.GetInts("shape")), ParseDType(ctx.attrs.GetString("dtype"))}};
  };
  source.type = "input";
  registry.Register(source);
  source.type = "variable";
  registry.Register(source);

  OpDef neg;
  neg.type = "neg";
  neg.infer = [](const OpContext& ctx) { return std::vector<TensorMeta>{ctx.inputs[0]}; };
  registry.Register(neg);
  OpDef add2 = neg;
  add2.type = "add2";
  add2.min_inputs = add2.max_inputs = 2;
  registry.Register(add2);
  OpDef assign = add2;
  assign.type = "assign";
  assign.num_outputs = 0;
  assign.infer = [](const OpContext&) { return std::vector<TensorMeta>{}; };
  registry.Register(assign);
  return registry;
}

kernels::KernelRegistry TestKernels() {
  kernels::KernelRegistry registry;
  // Variables start at scale * flat index.
  registry.Register({"variable", DeviceType::kCpu, DType::kF32}, [](const KernelContext& ctx) {
    const double scale = ctx.attrs.GetDouble("scale");
    for (int64_t i = 0; i < ctx.outputs[0]->numel(); ++i) ctx.outputs[0]->SetDouble(i, scale * i);
  });
  registry.Register({"neg", DeviceType::kCpu, DType::kF32}, [](const KernelContext& ctx) {
    for (int64_t i = 0; i < ctx.outputs[0]->numel(); ++i) {
      ctx.outputs[0]->SetDouble(i, -ctx.inputs[0]->GetDouble(i));
    }
  });
  registry.Register({"add2", DeviceType::kCpu, DType::kF32}, [](const KernelContext& ctx) {
    if (ctx.inputs[0]->shape() != ctx.inputs[1]->shape()) throw ShapeError("add2 shapes differ");
    for (int64_t i = 0; i < ctx.outputs[0]->numel(); ++i) {
      ctx.outputs[0]->SetDouble(i, ctx.inputs[0]->GetDouble(i) + ctx.inputs[1]->GetDouble(i));
    }
  });
  return registry;
}

Tensor Values(Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  Tensor t(std::move(shape), dtype);
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> AsVector(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetDouble(i));
  return v;
}

const sbp::Placement kCpu = sbp::ParsePlacement("cpu:0");

TEST(KernelRegistryTest, RegisterFindAndContext) {
  kernels::KernelRegistry registry = TestKernels();
  EXPECT_TRUE(registry.Has({"neg", DeviceType::kCpu, DType::kF32}));
  EXPECT_FALSE(registry.Has({"neg", DeviceType::kCpu, DType::kF64}));
  EXPECT_EQ(ErrorText<InvalidArgumentError>([&] {
              registry.Find({"matmul", DeviceType::kCpu, DType::kF64});
            }),
            "no cpu f64 kernel for op 'matmul'");
  EXPECT_EQ(ErrorText<InvalidArgumentError>([&] {
              registry.Register({"neg", DeviceType::kCpu, DType::kF32}, [](const auto&) {});
            }),
            "duplicate cpu f32 kernel for op 'neg'");

  const Attrs attrs{{"axis", int64_t{1}}};
  const Tensor a(Shape{2, 3}, DType::kF32);
  Tensor out(Shape{4}, DType::kF32);
  const KernelContext ctx = kernels::WholeTensorContext(attrs, {&a}, {&out});
  EXPECT_EQ(ctx.attrs.GetInt("axis"), 1);
  EXPECT_EQ(ctx.input_regions, (std::vector<Region>{Region::Full(Shape{2, 3})}));
  EXPECT_EQ(ctx.output_regions, (std::vector<Region>{Region::Full(Shape{4})}));
  EXPECT_EQ(ctx.input_logical_shapes, (std::vector<Shape>{Shape{2, 3}}));
  EXPECT_EQ(ctx.output_logical_shapes, (std::vector<Shape>{Shape{4}}));
  EXPECT_EQ(ctx.outputs[0], &out);
}

TEST(ReferenceInterpreterTest, RunsAndAssigns) {
  const graph::OpRegistry ops = TestOps();
  const kernels::KernelRegistry kernels = TestKernels();
  graph::GraphBuilder b(ops, kCpu);
  const TensorId x = b.Input("x", Shape{2, 2});
  const TensorId w = b.Variable("w", Shape{2, 2}, DType::kF32, Attrs{{"scale", 0.5}});
  const TensorId y = b.Add1("neg", {x});
  const TensorId z = b.Add1("add2", {y, w});
  b.Add("assign", {w, z});
  b.graph().Validate(ops);

  ReferenceInterpreter interp(b.graph(), kernels);
  EXPECT_EQ(AsVector(interp.variable("w")), (std::vector<double>{0, 0.5, 1, 1.5}));
  const Tensor feed = Values(Shape{2, 2}, {1, 2, 3, 4});
  std::map<TensorId, Tensor> out = interp.Step({{"x", feed}}, {y, z, w});
  EXPECT_EQ(AsVector(out.at(y)), (std::vector<double>{-1, -2, -3, -4}));
  EXPECT_EQ(AsVector(out.at(z)), (std::vector<double>{-1, -1.5, -2, -2.5}));
  EXPECT_EQ(AsVector(out.at(w)), (std::vector<double>{0, 0.5, 1, 1.5}));  // value in the step
  EXPECT_EQ(AsVector(interp.variable("w")), (std::vector<double>{-1, -1.5, -2, -2.5}));

  out = interp.Step({{"x", feed}}, {z});
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(AsVector(out.at(z)), (std::vector<double>{-2, -3.5, -5, -6.5}));

  interp.set_variable("w", Values(Shape{2, 2}, {10, 10, 10, 10}));
  out = interp.Step({{"x", feed}}, {z});
  EXPECT_EQ(AsVector(out.at(z)), (std::vector<double>{9, 8, 7, 6}));
}

TEST(ReferenceInterpreterTest, ReportsBadFeedsAndVariables) {
  const graph::OpRegistry ops = TestOps();
  const kernels::KernelRegistry kernels = TestKernels();
  graph::GraphBuilder b(ops, kCpu);
  const TensorId x = b.Input("x", Shape{2, 2});
  const TensorId w = b.Variable("w", Shape{2, 2}, DType::kF32, Attrs{{"scale", 1.0}});
  const TensorId z = b.Add1("add2", {x, w}, {}, "sum");
  ReferenceInterpreter interp(b.graph(), kernels);
  const Tensor good = Values(Shape{2, 2}, {1, 2, 3, 4});

  const auto step_error = [&](const std::map<std::string, Tensor>& feeds) {
    return ErrorText<InvalidArgumentError>([&] { interp.Step(feeds, {z}); });
  };
  EXPECT_EQ(step_error({}), "op 'x' (input): no feed given");
  EXPECT_EQ(step_error({{"x", Tensor(Shape{2, 3}, DType::kF32)}}),
            "op 'x' (input): feed is f32[2,3] but the input is f32[2,2]");
  EXPECT_EQ(step_error({{"x", Tensor(Shape{2, 2}, DType::kI32)}}),
            "op 'x' (input): feed is i32[2,2] but the input is f32[2,2]");
  EXPECT_EQ(step_error({{"x", good}, {"sum", good}}), "feed 'sum' matches no input op");
  EXPECT_NE(ErrorText<InvalidArgumentError>([&] {
              interp.Step({{"x", good}}, {7});
            }).find("7"),
            std::string::npos);
  EXPECT_EQ(AsVector(interp.Step({{"x", good}}, {z}).at(z)), (std::vector<double>{1, 3, 5, 7}));

  EXPECT_EQ(ErrorText<InvalidArgumentError>([&] { interp.variable("v"); }), "unknown variable 'v'");
  EXPECT_NE(ErrorText<InvalidArgumentError>([&] {
              interp.set_variable("w", Tensor(Shape{3}, DType::kF32));
            }).find("variable 'w'"),
            std::string::npos);
  EXPECT_EQ(ErrorText<InvalidArgumentError>([&] { interp.set_variable("v", good); }),
            "unknown variable 'v'");
}

TEST(ReferenceInterpreterTest, ReportsMissingKernelsAndBadAssigns) {
  const graph::OpRegistry ops = TestOps();
  const kernels::KernelRegistry kernels = TestKernels();
  graph::GraphBuilder b(ops, kCpu);
  const TensorId x = b.Input("x", Shape{3}, DType::kF64);
  const TensorId y = b.Add1("neg", {x}, {}, "negate");
  ReferenceInterpreter interp(b.graph(), kernels);
  EXPECT_EQ(ErrorText<InvalidArgumentError>([&] {
              interp.Step({{"x", Tensor(Shape{3}, DType::kF64)}}, {y});
            }),
            "op 'negate' (neg): no cpu f64 kernel for op 'neg'");

  graph::GraphBuilder c(ops, kCpu);
  const TensorId p = c.Input("p", Shape{3});
  const TensorId q = c.Add1("neg", {p});
  c.Add("assign", {q, p}, {}, "not_a_variable");
  ReferenceInterpreter bad(c.graph(), kernels);
  EXPECT_NE(ErrorText<InvalidArgumentError>([&] {
              bad.Step({{"p", Tensor(Shape{3}, DType::kF32)}}, {});
            }).find("op 'not_a_variable' (assign)"),
            std::string::npos);

  graph::GraphBuilder d(ops, kCpu);
  d.Variable("v", Shape{3}, DType::kF32, Attrs{});  // no "scale": the kernel's error, prefixed
  EXPECT_NE(ErrorText<InvalidArgumentError>([&] {
              ReferenceInterpreter(d.graph(), kernels);
            }).find("op 'v' (variable): "),
            std::string::npos);
}

}  // namespace
}  // namespace twinflow::interpreter
