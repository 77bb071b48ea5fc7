// The SBP search's combinatorial core against brute force: on random graphs of up to 8
// variables (ops) with up to 3 candidates (signatures) each, the solver finds the optimum; it
// is exact on chains and trees; it never loses to greedy or to a baseline (pure data
// parallelism in the real search), even when forced off the exact path; and it honours a
// memory limit, failing clearly exactly when nothing fits.
#include "engine/compiler/min_sum_solver.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

MinSumProblem DrawProblem(int max_vars, int max_candidates, bool tree) {
  MinSumProblem p;
  const int n = *rc::gen::inRange(1, max_vars + 1);
  for (int v = 0; v < n; ++v) {
    p.domain.push_back(*rc::gen::inRange(1, max_candidates + 1));
    std::vector<double> unary;
    for (int c = 0; c < p.domain[v]; ++c) unary.push_back(*rc::gen::inRange(0, 100) / 10.0);
    p.unary.push_back(unary);
  }
  const auto add_pair = [&](int a, int b) {
    MinSumProblem::Pairwise pair{a, b, {}};
    for (int k = 0; k < p.domain[a] * p.domain[b]; ++k) {
      pair.cost.push_back(*rc::gen::inRange(0, 100) / 10.0);
    }
    p.pairwise.push_back(pair);
  };
  for (int v = 1; v < n; ++v) {
    if (tree) {
      add_pair(*rc::gen::inRange(0, v), v);  // one parent each: a tree (a chain when v-1)
    } else {
      for (int u = 0; u < v; ++u) {
        if (*rc::gen::inRange(0, 3) == 0) add_pair(u, v);
      }
    }
  }
  return p;
}

// Every assignment, in order; calls fn(choice).
template <typename Fn>
void ForEachAssignment(const MinSumProblem& p, Fn fn) {
  std::vector<int> choice(p.domain.size(), 0);
  while (true) {
    fn(choice);
    size_t v = 0;
    for (; v < choice.size(); ++v) {
      if (++choice[v] < p.domain[v]) break;
      choice[v] = 0;
    }
    if (v == choice.size()) return;
  }
}

double BruteForce(const MinSumProblem& p, double limit = std::numeric_limits<double>::infinity()) {
  double best = std::numeric_limits<double>::infinity();
  ForEachAssignment(p, [&](const std::vector<int>& c) {
    if (MinSumSolver::PeakMemory(p, c) <= limit) best = std::min(best, MinSumSolver::Cost(p, c));
  });
  return best;
}

RC_GTEST_PROP(MinSumSolver, MatchesBruteForceOnSmallGraphs, ()) {
  MinSumProblem p = DrawProblem(8, 3, false);
  p.baselines.push_back(std::vector<int>(p.domain.size(), 0));  // "data parallel"
  const MinSumSolution s = MinSumSolver().Solve(p);
  const double optimum = BruteForce(p);
  RC_ASSERT(std::fabs(s.cost - optimum) <= 1e-9 * (1 + optimum));
  RC_ASSERT(s.exact);
  RC_ASSERT(s.cost <= MinSumSolver::Cost(p, MinSumSolver::Greedy(p, 0)) + 1e-9);
  RC_ASSERT(s.cost <= MinSumSolver::Cost(p, p.baselines[0]) + 1e-9);
}

RC_GTEST_PROP(MinSumSolver, ExactOnChainsAndTrees, ()) {
  const MinSumProblem p = DrawProblem(10, 3, true);
  const MinSumSolution s = MinSumSolver(/*table_budget=*/64).Solve(p);
  RC_ASSERT(s.exact);  // two-variable tables suffice on a tree
  RC_ASSERT(std::fabs(s.cost - BruteForce(p)) <= 1e-9 * (1 + s.cost));
}

RC_GTEST_PROP(MinSumSolver, NeverWorseThanGreedyOrBaselineWhenInexact, ()) {
  MinSumProblem p = DrawProblem(8, 3, false);
  std::vector<int> baseline;
  for (int d : p.domain) baseline.push_back(*rc::gen::inRange(0, d));
  p.baselines.push_back(baseline);
  const MinSumSolution s = MinSumSolver(/*table_budget=*/1).Solve(p);  // forces the fallback
  RC_ASSERT(s.cost <= MinSumSolver::Cost(p, MinSumSolver::Greedy(p, 0)) + 1e-9);
  RC_ASSERT(s.cost <= MinSumSolver::Cost(p, baseline) + 1e-9);
}

RC_GTEST_PROP(MinSumSolver, HonoursTheMemoryLimit, ()) {
  MinSumProblem p = DrawProblem(7, 3, false);
  for (size_t v = 0; v < p.domain.size(); ++v) {
    std::vector<double> memory;
    for (int c = 0; c < p.domain[v]; ++c) memory.push_back(*rc::gen::inRange(1, 20));
    p.memory.push_back(memory);
    p.memory_group.push_back(*rc::gen::inRange(0, 2));
  }
  p.memory_limit = *rc::gen::inRange(1, 80);
  const double feasible_optimum = BruteForce(p, p.memory_limit);
  if (!std::isfinite(feasible_optimum)) {
    RC_ASSERT_THROWS_AS(MinSumSolver().Solve(p), OutOfMemoryError);
    return;
  }
  const MinSumSolution s = MinSumSolver().Solve(p);
  RC_ASSERT(s.peak_memory <= p.memory_limit);
  RC_ASSERT(s.cost >= feasible_optimum - 1e-9);
  RC_TAG(s.cost <= feasible_optimum + 1e-9 ? "constrained optimum" : "feasible, not optimal");
}

}  // namespace
}  // namespace twinflow::compiler
