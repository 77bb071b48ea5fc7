// Every parallel strategy applied to the MLP and GPT builders leaves the SBP search a
// signature for every op.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/compiler/sbp_search.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace model_test_helpers;  // NOLINT: test helpers

// Every strategy's pins must leave the SBP search a signature for every op, including
// strategies with a degree of 1 (a mesh axis of one device).
void ExpectSearchable(const BuiltModel& model, const std::string& what) {
  compiler::SbpSearchOptions options;
  options.method = compiler::SbpSearchOptions::Method::kPropagate;
  try {
    const compiler::SbpAssignment a =
        compiler::SearchSbp(model.graph, Registry(), sbp::AlphaBetaCostModel(), options);
    EXPECT_EQ(a.signatures.size(), model.graph.ops().size()) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

TEST(Models, EveryStrategyIsSearchable) {
  const std::vector<std::pair<std::string, int64_t>> strategies = {{"dp=2,tp=2", 4},
                                                                   {"dp=4", 4},
                                                                   {"tp=4", 4},
                                                                   {"dp=1", 1},
                                                                   {"dp=2,pp=2", 4},
                                                                   {"tp=2,pp=2", 4},
                                                                   {"dp=2,tp=2,pp=2,mb=2", 8}};
  for (const auto& [strategy, devices] : strategies) {
    ExpectSearchable(BuildMlp(Registry(), SmallMlp(), Options(strategy, devices)),
                     "mlp " + strategy);
    ExpectSearchable(BuildGpt(Registry(), SmallGpt(), Options(strategy, devices)),
                     "gpt " + strategy);
  }
}

}  // namespace
}  // namespace twinflow::models
