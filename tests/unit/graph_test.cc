// LogicalGraph, GraphBuilder, OpRegistry and NdSignatures, with a few test-local op types so
// that the graph core is checked apart from the op library.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/logical_graph.h"
#include "engine/graph/op_def.h"
#include "engine/graph/op_registry.h"

namespace twinflow::graph {
namespace {

using sbp::NdSbp;
using sbp::ParseNdSbp;
using sbp::ParsePlacement;
using sbp::Sbp;

// Runs `fn`, expecting an error of type E whose message contains every one of `parts`.
template <typename E, typename F>
void ExpectError(F fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error thrown";
}

std::vector<SbpSignature> ElementwiseSignatures(int rank, int arity) {
  std::vector<SbpSignature> sigs;
  for (int axis = 0; axis < rank; ++axis) {
    sigs.push_back({std::vector<Sbp>(arity, Sbp::Split(axis)), {Sbp::Split(axis)}});
  }
  sigs.push_back({std::vector<Sbp>(arity, Sbp::Broadcast()), {Sbp::Broadcast()}});
  sigs.push_back({std::vector<Sbp>(arity, Sbp::Partial()), {Sbp::Partial()}});
  return sigs;
}

OpRegistry TestRegistry() {
  OpRegistry registry;
  OpDef input;
  input.type = "input";
  input.min_inputs = input.max_inputs = 0;
  input.role = OpRole::kInput;
  input.infer = [](const OpContext& ctx) {
    return std::vector<TensorMeta>{
        {Shape(ctx.attrs.GetInts("shape")), ParseDType(ctx.attrs.GetString("dtype"))}};
  };
  registry.Register(input);
  OpDef variable = input;
  variable.type = "variable";
  registry.Register(variable);

  OpDef neg;
  neg.type = "neg";
  neg.infer = [](const OpContext& ctx) { return std::vector<TensorMeta>{ctx.inputs[0]}; };
  neg.signatures = [](const OpContext& ctx, int64_t) {
    return ElementwiseSignatures(ctx.inputs[0].shape.rank(), 1);
  };
  registry.Register(neg);

  OpDef add2;
  add2.type = "add2";
  add2.min_inputs = add2.max_inputs = 2;
  add2.infer = [](const OpContext& ctx) {
    if (ctx.inputs[0] != ctx.inputs[1]) {
      throw ShapeError("add2: " + ctx.inputs[0].ToString() + " vs " + ctx.inputs[1].ToString());
    }
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  add2.signatures = [](const OpContext& ctx, int64_t) {
    return ElementwiseSignatures(ctx.inputs[0].shape.rank(), 2);
  };
  registry.Register(add2);

  OpDef halves;  // two outputs, to check output names
  halves.type = "halves";
  halves.num_outputs = 2;
  halves.infer = [](const OpContext& ctx) {
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[0]};
  };
  registry.Register(halves);
  return registry;
}

const sbp::Placement kCpu = ParsePlacement("cpu:0-3 [2,2]");
const sbp::Placement kCuda = ParsePlacement("cuda:0-3 [2,2]");
const TensorMeta kMeta{Shape{4, 6}, DType::kF32};
const Attrs kNoAttrs;

TEST(GraphTest, MetaText) {
  EXPECT_EQ((TensorMeta{Shape{8, 16}, DType::kF32}).ToString(), "f32[8,16]");
  EXPECT_EQ((TensorMeta{Shape{}, DType::kI64}).ToString(), "i64[]");
}

TEST(GraphTest, BuilderNamesAndConsumers) {
  const OpRegistry registry = TestRegistry();
  GraphBuilder b(registry, kCpu);
  const TensorId x = b.Input("x", Shape{4, 6});
  const TensorId w =
      b.Variable("w", Shape{4, 6}, DType::kF32, Attrs{{"init", std::string("ones")}});
  const TensorId y = b.Add1("neg", {x});
  const TensorId z = b.Add1("add2", {y, w}, {}, "sum");
  const std::vector<TensorId> h = b.Add("halves", {z});
  const TensorId u = b.Add1("add2", {x, y});

  const LogicalGraph& g = b.graph();
  EXPECT_EQ(g.op(2).name, "neg_2");
  EXPECT_EQ(g.tensor(y).name, "neg_2");
  EXPECT_EQ(g.tensor(z).name, "sum");
  EXPECT_EQ(g.tensor(h[0]).name, "halves_4/out0");
  EXPECT_EQ(g.tensor(h[1]).name, "halves_4/out1");
  EXPECT_EQ(g.tensor(h[1]).output_index, 1);
  EXPECT_EQ(g.FindOp("sum"), std::optional<OpId>(3));
  EXPECT_EQ(g.FindTensor("x"), std::optional<TensorId>(x));
  EXPECT_EQ(g.FindOp("nope"), std::nullopt);
  EXPECT_EQ(g.Consumers(x), (std::vector<OpId>{2, 5}));
  EXPECT_EQ(g.Consumers(y), (std::vector<OpId>{3, 5}));
  EXPECT_TRUE(g.Consumers(u).empty());
  EXPECT_EQ(g.op(0).attrs.GetInts("shape"), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(g.op(1).attrs.GetString("dtype"), "f32");
  EXPECT_EQ(g.op(1).attrs.GetString("init"), "ones");
  EXPECT_EQ(g.op(5).placement, kCpu);
  g.Validate(registry);

  b.SetPlacement(ParsePlacement("cpu:4-7"));
  const TensorId v = b.Add1("neg", {u}, {}, "later");
  EXPECT_EQ(b.graph().op(b.graph().tensor(v).producer).placement.ToString(), "cpu:4-7 [4]");

  ExpectError<InvalidArgumentError>([&] { b.Add1("neg", {x}, {}, "sum"); }, {"'sum'"});
  ExpectError<InvalidArgumentError>([&] { b.Add1("halves", {x}, {}, "two"); }, {"'two'"});
  ExpectError<ShapeError>(
      [&] {
        b.Add1("add2", {x, b.Input("q", Shape{2})}, {}, "bad");
      },
      {"op 'bad' (add2): ", "f32[4,6] vs f32[2]"});
  ExpectError<InvalidArgumentError>([&] { b.Add1("mystery", {x}, {}, "m"); },
                                    {"op 'm' (mystery)", "unknown op type"});
  ExpectError<InvalidArgumentError>(
      [&] {
        b.Add1("neg", {x, y}, {}, "n2");
      },
      {"op 'n2' (neg)", "takes 1 inputs, got 2"});
  ExpectError<InvalidArgumentError>([&] { b.Add1("neg", {77}); }, {"neg_", "77"});
}

TEST(GraphTest, TopologicalOrderIsDeterministic) {
  LogicalGraph g;
  // Op 0 reads the tensor of op 2, which is created later; ties go in id order.
  g.AddOp("late", "neg", {}, {2}, {kMeta}, kCpu);
  g.AddOp("a", "input", {}, {}, {kMeta}, kCpu);
  g.AddOp("b", "input", {}, {}, {kMeta}, kCpu);
  g.AddOp("c", "add2", {}, {1, 0}, {kMeta}, kCpu);
  EXPECT_EQ(g.TopologicalOrder(), (std::vector<OpId>{1, 2, 0, 3}));
  EXPECT_EQ(g.Consumers(2), (std::vector<OpId>{0}));
}

TEST(GraphTest, PinsAreChecked) {
  const OpRegistry registry = TestRegistry();
  GraphBuilder b(registry, kCpu);
  const TensorId x = b.Input("x", Shape{4, 6});
  b.Pin(x, ParseNdSbp("(S(0),S(1))"));
  EXPECT_EQ(b.graph().tensor(x).pin->layout, ParseNdSbp("(S(0),S(1))"));
  ExpectError<SbpError>([&] { b.Pin(x, ParseNdSbp("(S(2),B)")); }, {"tensor 'x'", "S(2)"});
  ExpectError<SbpError>([&] { b.Pin(x, ParseNdSbp("S(0)")); }, {"tensor 'x'", "hierarchy"});
  ExpectError<InvalidArgumentError>([&] { b.Pin(42, ParseNdSbp("(B,B)")); }, {"42"});
  EXPECT_EQ(b.graph().tensor(x).pin->layout,
            ParseNdSbp("(S(0),S(1))"));  // failed pins change nothing
  b.graph().Validate(registry);
}

// An input op `name` of kMeta's shape and dtype, added to `g` directly.
void AddInput(LogicalGraph& g, const std::string& name) {
  g.AddOp(name, "input", {{"shape", std::vector<int64_t>{4, 6}}, {"dtype", std::string("f32")}}, {},
          {kMeta}, kCpu);
}

TEST(GraphTest, ValidateNamesTheOpsOfACycle) {
  const OpRegistry registry = TestRegistry();
  {  // a cycle made by reading tensors of later ops
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("p", "add2", {}, {0, 3}, {kMeta}, kCpu);
    g.AddOp("q", "neg", {}, {1}, {kMeta}, kCpu);
    g.AddOp("r", "neg", {}, {2}, {kMeta}, kCpu);
    g.AddOp("after", "neg", {}, {3}, {kMeta}, kCpu);
    ExpectError<InvalidArgumentError>([&] { g.Validate(registry); },
                                      {"cycle", "op 'p' -> op 'q' -> op 'r' -> op 'p'"});
    ExpectError<InvalidArgumentError>([&] { g.TopologicalOrder(); }, {"op 'p' (add2)"});
  }
  {  // a self-loop
    LogicalGraph g;
    g.AddOp("self", "neg", {}, {0}, {kMeta}, kCpu);
    ExpectError<InvalidArgumentError>([&] { g.Validate(registry); }, {"cycle", "op 'self'"});
  }
}

TEST(GraphTest, ValidateNamesTheOpReadingAnUnknownTensor) {
  const OpRegistry registry = TestRegistry();
  LogicalGraph g;
  AddInput(g, "x");
  g.AddOp("dangling", "neg", {}, {99}, {kMeta}, kCpu);
  ExpectError<InvalidArgumentError>([&] { g.Validate(registry); }, {"op 'dangling' (neg)", "99"});
}

TEST(GraphTest, ValidateNamesTheOpWhoseOutputsDoNotInfer) {
  const OpRegistry registry = TestRegistry();
  {
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("wrong", "neg", {}, {0}, {TensorMeta{Shape{4, 5}, DType::kF32}}, kCpu);
    ExpectError<ShapeError>([&] { g.Validate(registry); },
                            {"op 'wrong' (neg)", "output 0", "f32[4,5]", "f32[4,6]"});
  }
  {
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("wrong_type", "neg", {}, {0}, {TensorMeta{Shape{4, 6}, DType::kI32}}, kCpu);
    ExpectError<ShapeError>([&] { g.Validate(registry); }, {"op 'wrong_type'", "i32[4,6]"});
  }
  {
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("twice", "add2", {}, {0, 0}, {kMeta}, kCpu);
    g.Validate(registry);
    EXPECT_EQ(g.Consumers(0), (std::vector<OpId>{1}));
    LogicalGraph h;
    AddInput(h, "x");
    h.AddOp("short", "input", {{"shape", std::vector<int64_t>{2}}, {"dtype", std::string("f32")}},
            {}, {TensorMeta{Shape{2}, DType::kF32}}, kCpu);
    h.AddOp("bad_add", "add2", {}, {0, 1}, {kMeta}, kCpu);
    ExpectError<ShapeError>([&] { h.Validate(registry); },
                            {"op 'bad_add' (add2): add2: f32[4,6] vs f32[2]"});
  }
}

TEST(GraphTest, ValidateNamesTheOpOfAnUnknownTypeOrArity) {
  const OpRegistry registry = TestRegistry();
  {
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("odd", "mystery", {}, {0}, {kMeta}, kCpu);
    ExpectError<InvalidArgumentError>([&] { g.Validate(registry); },
                                      {"op 'odd' (mystery)", "unknown op type"});
  }
  {
    LogicalGraph g;
    AddInput(g, "x");
    g.AddOp("three", "add2", {}, {0, 0, 0}, {kMeta}, kCpu);
    ExpectError<InvalidArgumentError>([&] { g.Validate(registry); },
                                      {"op 'three' (add2)", "takes 2 inputs, got 3"});
  }
}

TEST(GraphTest, ValidateNamesTheOpsAcrossDeviceTypes) {
  const OpRegistry registry = TestRegistry();
  LogicalGraph g;
  AddInput(g, "x");
  g.AddOp("on_gpu", "neg", {}, {0}, {kMeta}, kCuda);
  ExpectError<InvalidArgumentError>([&] { g.Validate(registry); },
                                    {"op 'on_gpu' (neg)", "op 'x' (input)", "cuda", "cpu", "copy"});
}

TEST(GraphTest, AddOpRejectsEmptyAndTakenNames) {
  const OpRegistry registry = TestRegistry();
  LogicalGraph g;
  ExpectError<InvalidArgumentError>([&] { g.AddOp("", "neg", {}, {}, {}, kCpu); }, {"neg"});
  AddInput(g, "x");
  ExpectError<InvalidArgumentError>([&] { AddInput(g, "x"); }, {"duplicate op name 'x'"});
  g.AddOp("two", "halves", {}, {0}, {kMeta, kMeta}, kCpu);
  ExpectError<InvalidArgumentError>([&] { g.AddOp("two/out1", "neg", {}, {0}, {kMeta}, kCpu); },
                                    {"'two/out1'"});
  EXPECT_EQ(g.ops().size(), 2u);
  EXPECT_EQ(g.tensors().size(), 3u);
  g.Validate(registry);
}

TEST(GraphTest, RegistryBasics) {
  OpRegistry registry = TestRegistry();
  EXPECT_EQ(registry.Types(),
            (std::vector<std::string>{"add2", "halves", "input", "neg", "variable"}));
  EXPECT_TRUE(registry.Has("neg"));
  EXPECT_EQ(registry.Find("neg").type, "neg");
  ExpectError<InvalidArgumentError>([&] { registry.Find("nope"); }, {"'nope'"});
  OpDef again;
  again.type = "neg";
  ExpectError<InvalidArgumentError>([&] { registry.Register(again); }, {"'neg'"});
}

TEST(GraphTest, SignatureText) {
  const SbpSignature sig{{Sbp::Split(0), Sbp::Broadcast()}, {Sbp::Split(0)}};
  EXPECT_EQ(sig.ToString(), "S(0),B -> S(0)");
  const NdSbpSignature nd{{ParseNdSbp("(S(0),B)"), ParseNdSbp("(B,S(1))")},
                          {ParseNdSbp("(S(0),S(1))")}};
  EXPECT_EQ(nd.ToString(), "(S(0),B),(B,S(1)) -> (S(0),S(1))");
  EXPECT_EQ((SbpSignature{{}, {Sbp::Broadcast()}}).ToString(), "-> B");
}

std::vector<std::string> Texts(const std::vector<NdSbpSignature>& sigs) {
  std::vector<std::string> texts;
  for (const NdSbpSignature& s : sigs) texts.push_back(s.ToString());
  return texts;
}

TEST(GraphTest, NdSignaturesProductAndDropping) {
  const OpRegistry registry = TestRegistry();
  const OpDef& neg = registry.Find("neg");
  const std::vector<TensorMeta> inputs{{Shape{4, 6}, DType::kF32}};
  const OpContext ctx{neg.type, kNoAttrs, inputs};
  const std::vector<NdSbpSignature> all = NdSignatures(neg, ctx, Shape{2, 2});
  ASSERT_EQ(all.size(), 16u);  // 4 x 4, every split fits
  EXPECT_EQ(all[0].ToString(), "(S(0),S(0)) -> (S(0),S(0))");
  EXPECT_EQ(all[1].ToString(), "(S(0),S(1)) -> (S(0),S(1))");
  EXPECT_EQ(all[4].ToString(), "(S(1),S(0)) -> (S(1),S(0))");
  EXPECT_EQ(all[15].ToString(), "(P,P) -> (P,P)");

  // Axis 0 of extent 3 cannot be split in 4 by both mesh axes together; in 2 it can.
  const std::vector<TensorMeta> small{{Shape{3, 1}, DType::kF32}};
  const std::vector<std::string> texts =
      Texts(NdSignatures(neg, {neg.type, kNoAttrs, small}, Shape{2, 2}));
  EXPECT_EQ(texts,
            (std::vector<std::string>{"(S(0),B) -> (S(0),B)", "(S(0),P) -> (S(0),P)",
                                      "(B,S(0)) -> (B,S(0))", "(B,B) -> (B,B)", "(B,P) -> (B,P)",
                                      "(P,S(0)) -> (P,S(0))", "(P,B) -> (P,B)", "(P,P) -> (P,P)"}));

  // A mesh axis of size 1 contributes only the all-B signature.
  EXPECT_EQ(Texts(NdSignatures(neg, ctx, Shape{1, 4})),
            (std::vector<std::string>{"(B,S(0)) -> (B,S(0))", "(B,S(1)) -> (B,S(1))",
                                      "(B,B) -> (B,B)", "(B,P) -> (B,P)"}));
  EXPECT_EQ(Texts(NdSignatures(neg, {neg.type, kNoAttrs, small}, Shape{1, 4})),
            (std::vector<std::string>{"(B,B) -> (B,B)", "(B,P) -> (B,P)"}));

  // Binary ops: both inputs and the output are checked.
  const OpDef& add2 = registry.Find("add2");
  const std::vector<TensorMeta> pair{{Shape{2, 5}, DType::kF32}, {Shape{2, 5}, DType::kF32}};
  const std::vector<NdSbpSignature> sums =
      NdSignatures(add2, {add2.type, kNoAttrs, pair}, Shape{4});
  EXPECT_EQ(Texts(sums), (std::vector<std::string>{"S(1),S(1) -> S(1)", "B,B -> B", "P,P -> P"}));
}

TEST(GraphTest, NdSignaturesDeduplicateAndCheck) {
  OpDef dup;
  dup.type = "dup";
  dup.infer = [](const OpContext& ctx) { return std::vector<TensorMeta>{ctx.inputs[0]}; };
  dup.signatures = [](const OpContext&, int64_t) {
    return std::vector<SbpSignature>{{{Sbp::Split(0)}, {Sbp::Split(0)}},
                                     {{Sbp::Split(0)}, {Sbp::Split(0)}},
                                     {{Sbp::Partial()}, {Sbp::Partial()}}};
  };
  const std::vector<TensorMeta> inputs{{Shape{8}, DType::kF32}};
  // No all-B signature: the size-1 axis keeps them all, and duplicates go.
  EXPECT_EQ(Texts(NdSignatures(dup, {dup.type, kNoAttrs, inputs}, Shape{1, 2})),
            (std::vector<std::string>{"(S(0),S(0)) -> (S(0),S(0))", "(S(0),P) -> (S(0),P)",
                                      "(P,S(0)) -> (P,S(0))", "(P,P) -> (P,P)"}));
  const std::vector<TensorMeta> scalar{{Shape{}, DType::kF32}};
  ExpectError<SbpError>(
      [&] {
        NdSignatures(dup, {dup.type, kNoAttrs, scalar}, Shape{2});
      },
      {"'dup'", "S(0)"});
  OpDef wrong = dup;
  wrong.signatures = [](const OpContext&, int64_t) {
    return std::vector<SbpSignature>{{{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}}};
  };
  ExpectError<InvalidArgumentError>(
      [&] {
        NdSignatures(wrong, {"dup", kNoAttrs, inputs}, Shape{2});
      },
      {"'dup'", "B,B -> B"});
}

}  // namespace
}  // namespace twinflow::graph
