#pragma once
// What the training tests compare: each step's loss from a run's fetches, and a test name
// from a strategy string.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "engine/runtime/threaded_executor.h"
#include "models/model.h"

namespace twinflow::testing {

// Each step's loss: the sum of its fetched loss tensor (a step's micro-batches' shares).
inline std::vector<double> StepLosses(const models::BuiltModel& model,
                                      const runtime::RunResult& result) {
  const std::string name = model.graph.tensor(model.loss).name;
  std::vector<double> losses;
  for (const auto& step : result.fetches) {
    const Tensor& fetched = step.at(name);
    double sum = 0;
    for (int64_t i = 0; i < fetched.numel(); ++i) sum += fetched.GetDouble(i);
    losses.push_back(sum);
  }
  return losses;
}

// A test name from a strategy string: "dp=2,tp=2" -> "dp_2_tp_2".
inline std::string StrategyTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace twinflow::testing
