// Strategies mean what they say: under dp/tp degrees the GPT and the MLP run Megatron's
// layouts, whatever the search would prefer. No parameter is ever re-laid-out (so none is
// all-gathered), every forward matmul on the tp axis is column- or row-parallel, the embedding
// is vocabulary-parallel, and each block's forward pass pays exactly Megatron's two all-reduces
// over tp (after the attention projection and after the second MLP linear).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/compiler/parallelism.h"
#include "engine/compiler/sbp_search.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using model_test_helpers::MegatronSizedGpt;
using model_test_helpers::Options;
using model_test_helpers::Registry;

compiler::SbpAssignment Search(const BuiltModel& model) {
  return compiler::SearchSbp(model.graph, Registry(),
                             sbp::AlphaBetaCostModel(sbp::AlphaBetaPreset("accelerator")));
}

bool FromVariable(const BuiltModel& model, graph::TensorId t) {
  return model.graph.op(model.graph.tensor(t).producer).type == "variable";
}

void ExpectNoParameterMoves(const BuiltModel& model, const compiler::SbpAssignment& a) {
  for (const compiler::BoxingEdge& e : a.boxings) {
    EXPECT_FALSE(FromVariable(model, e.tensor))
        << "parameter '" << model.graph.tensor(e.tensor).name << "' is boxed into '"
        << model.graph.op(e.consumer).name << "':\n"
        << e.plan->ToString();
  }
}

// The forward boxings of block `layer`, as "tensor: kinds".
std::map<std::string, std::string> BlockForwardBoxings(const BuiltModel& model,
                                                       const compiler::SbpAssignment& a,
                                                       int layer) {
  std::map<std::string, std::string> out;
  const std::string prefix = "block" + std::to_string(layer) + "/";
  for (const compiler::BoxingEdge& e : a.boxings) {
    const graph::OpNode& consumer = model.graph.op(e.consumer);
    if (model.graph.IsBackward(consumer.id) || !consumer.name.starts_with(prefix)) continue;
    std::string kinds;
    for (const sbp::BoxingStep& step : e.plan->steps) {
      kinds += std::string(kinds.empty() ? "" : "+") + sbp::BoxingStepKindName(step.kind) + "@" +
               std::to_string(step.mesh_axis);
    }
    out[model.graph.tensor(e.tensor).name] += kinds;
  }
  return out;
}

class MegatronGpt : public ::testing::TestWithParam<int> {};

TEST_P(MegatronGpt, TensorParallelismRunsMegatronsLayouts) {
  const int tp = GetParam();
  const BuiltModel model =
      BuildGpt(Registry(), MegatronSizedGpt(), Options("tp=" + std::to_string(tp), tp));
  const compiler::SbpAssignment a = Search(model);
  ExpectNoParameterMoves(model, a);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "block" + std::to_string(layer) + "/";
    const std::map<std::string, std::string> want = {{p + "proj/matmul", "all_reduce@1"},
                                                     {p + "fc2/matmul", "all_reduce@1"}};
    EXPECT_EQ(BlockForwardBoxings(model, a, layer), want) << "block " << layer << ", tp=" << tp;
  }
  for (const compiler::FamilyParallelism& f :
       compiler::ParallelismByFamily(model.graph, Registry(), a)) {
    if (f.type == "matmul") {
      // q, k, v, fc1 and the head column-parallel; proj and fc2 row-parallel.
      EXPECT_EQ(f.axes.at(1), (std::map<std::string, int>{{"column", 9}, {"row", 4}}));
    }
    if (f.type == "embedding") {
      EXPECT_EQ(f.axes.at(1), (std::map<std::string, int>{{"vocabulary", 1}}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Degrees, MegatronGpt, ::testing::Values(2, 4, 8));

TEST(MegatronLayouts, HybridSplitsTheBatchOverDpAndKeepsTpMegatrons) {
  const BuiltModel model = BuildGpt(Registry(), MegatronSizedGpt(), Options("dp=2,tp=4", 8));
  const compiler::SbpAssignment a = Search(model);
  ExpectNoParameterMoves(model, a);
  for (const compiler::FamilyParallelism& f :
       compiler::ParallelismByFamily(model.graph, Registry(), a)) {
    if (f.type == "matmul") {
      EXPECT_EQ(f.axes.at(0), (std::map<std::string, int>{{"rows", 13}}));
      EXPECT_EQ(f.axes.at(1), (std::map<std::string, int>{{"column", 9}, {"row", 4}}));
    }
  }
}

// ZeRO stage 1: each gradient is reduce-scattered into the update's shard over dp and each
// updated weight all-gathered back into the replicated parameter, but for the 8 column-parallel
// biases (q, k, v, fc1 of 2 blocks), vectors tp already splits, which stay whole and are
// all-reduced; the forward pass still reads every weight as pinned.
TEST(MegatronLayouts, ZeroOneReduceScattersGradientsAndGathersTheUpdatedWeights) {
  const BuiltModel model = BuildGpt(Registry(), MegatronSizedGpt(), Options("dp=2,tp=4,zero=1", 8));
  const compiler::SbpAssignment a = Search(model);
  int scatters = 0, gathers = 0, dp_all_reduces = 0;
  for (const compiler::BoxingEdge& e : a.boxings) {
    const graph::OpRole role = Registry().Find(model.graph.op(e.consumer).type).role;
    if (!model.graph.IsBackward(e.consumer) && role != graph::OpRole::kAssign) {
      EXPECT_FALSE(FromVariable(model, e.tensor)) << model.graph.tensor(e.tensor).name;
    }
    for (const sbp::BoxingStep& step : e.plan->steps) {
      if (step.mesh_axis != 0) continue;
      scatters += role == graph::OpRole::kOptimizerUpdate &&
                  step.kind == sbp::BoxingStepKind::kReduceScatter;
      gathers += role == graph::OpRole::kAssign && step.kind == sbp::BoxingStepKind::kAllGather;
      dp_all_reduces += step.kind == sbp::BoxingStepKind::kAllReduce;
    }
  }
  EXPECT_EQ(scatters, static_cast<int>(model.parameters.size()) - 8);
  EXPECT_EQ(gathers, scatters);
  EXPECT_EQ(dp_all_reduces, 8);
}

TEST(MegatronLayouts, MlpPairsColumnAndRowWithOneAllReduceAndAVocabularyParallelLoss) {
  MlpConfig c;
  c.widths = {64, 256, 256, 16};
  c.batch = 32;
  const BuiltModel model = BuildMlp(Registry(), c, Options("tp=4", 4));
  const compiler::SbpAssignment a = Search(model);
  ExpectNoParameterMoves(model, a);
  int pair_all_reduces = 0;
  for (const compiler::BoxingEdge& e : a.boxings) {
    if (model.graph.IsBackward(e.consumer)) continue;
    const std::string& tensor = model.graph.tensor(e.tensor).name;
    for (const sbp::BoxingStep& step : e.plan->steps) {
      // The logits stay split by class: the loss reduces its maxima and sums over tp, and
      // never gathers them.
      EXPECT_NE(step.kind, sbp::BoxingStepKind::kAllGather) << e.plan->ToString();
      if (tensor == "layer1/matmul") {
        EXPECT_EQ(step.kind, sbp::BoxingStepKind::kAllReduce);
        ++pair_all_reduces;
      }
    }
  }
  EXPECT_EQ(pair_all_reduces, 1);  // after layer1, the row-parallel half of the pair
}

TEST(MegatronLayouts, TpAutoLeavesTheTpAxisToTheSearch) {
  BuildOptions options = Options("dp=2,tp=auto", 8);
  const BuiltModel model = BuildGpt(Registry(), MegatronSizedGpt(), options);
  EXPECT_EQ(model.strategy.tp, 4);
  const graph::TensorNode& wte = model.graph.tensor(*model.graph.FindTensor("wte"));
  ASSERT_TRUE(wte.pin.has_value());
  EXPECT_EQ(wte.pin->ToString(), "(B,*)");
  const graph::TensorNode& ids = model.graph.tensor(*model.graph.FindTensor("ids"));
  EXPECT_EQ(ids.pin->ToString(), "(S(0),*)");
  Search(model);  // the search finds a layout on the free axis
}

}  // namespace
}  // namespace twinflow::models
