#pragma once
// Shared by the boxing executor and boxing plan tests: layouts from text, hand-made steps and
// plans, and running a plan on a random tensor to compare the logical values before and after.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/rng.h"
#include "engine/sbp/boxing_executor.h"
#include "engine/sbp/distribute.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp::boxing_test_helpers {

inline Layout L(const char* text) { return ParseLayout(text); }

inline BoxingStep Step(BoxingStepKind kind, const char* from, const char* to, int mesh_axis = -1) {
  BoxingStep step;
  step.kind = kind;
  step.from = L(from);
  step.to = L(to);
  step.mesh_axis = mesh_axis;
  return step;
}

inline BoxingPlan Plan(Shape shape, DType dtype, std::vector<BoxingStep> steps) {
  BoxingPlan plan;
  plan.shape = std::move(shape);
  plan.dtype = dtype;
  plan.src = steps.front().from;
  plan.dst = steps.back().to;
  plan.steps = std::move(steps);
  return plan;
}

// Every non-empty intersection of a source slice with a destination slice.
inline std::vector<RegionTransfer> AllTransfers(const Shape& shape, DType dtype, const Layout& from,
                                                const Layout& to) {
  std::vector<RegionTransfer> out;
  const std::vector<Region> src = PhysicalRegions(shape, from);
  const std::vector<Region> dst = PhysicalRegions(shape, to);
  for (size_t j = 0; j < dst.size(); ++j) {
    for (size_t i = 0; i < src.size(); ++i) {
      const Region r = src[i].Intersect(dst[j]);
      if (r.empty()) continue;
      out.push_back(
          {static_cast<int64_t>(i), static_cast<int64_t>(j), r, r.numel() * DTypeSize(dtype)});
    }
  }
  return out;
}

// Distributes a random tensor with plan.src, runs the plan and checks that the outputs hold
// the same logical tensor under plan.dst. Integer dtypes must come back exactly.
inline BoxingResult RunAndCheck(const BoxingPlan& plan, uint64_t seed) {
  Rng rng(seed);
  const Tensor logical = Tensor::Random(plan.shape, plan.dtype, rng);
  std::vector<Tensor> inputs = Distribute(logical, plan.src, rng);
  const Tensor before = Assemble(inputs, plan.shape, plan.src);
  BoxingResult result = ExecuteBoxing(plan, inputs);
  EXPECT_EQ(result.outputs.size(), static_cast<size_t>(plan.dst.placement.size()));
  const Tensor after = Assemble(result.outputs, plan.shape, plan.dst);
  if (IsFloating(plan.dtype)) {
    EXPECT_LE(CloseRatio(after, before, 1e-6, 1e-6), 1.0) << plan.ToString();
  } else {
    EXPECT_TRUE(BitEqual(after, logical)) << plan.ToString();
  }
  return result;
}

// Runs a wrong plan on well-formed inputs and returns the error message.
template <typename E>
std::string ExpectThrows(const BoxingPlan& plan) {
  Rng rng(99);
  const Tensor logical = Tensor::Random(plan.shape, plan.dtype, rng);
  try {
    ExecuteBoxing(plan, Distribute(logical, plan.src, rng));
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "the wrong plan passed:\n" << plan.ToString();
  return "";
}

}  // namespace twinflow::sbp::boxing_test_helpers
