#pragma once
// MinSumSolver: choose one candidate per variable to minimise a sum of unary and pairwise
// costs, subject to an additive memory budget. This is the combinatorial core of the SBP
// search (sbp_search.h), kept free of graph types so it can be tested against brute force.
//
// Method: variable elimination (min-sum dynamic programming), always eliminating next the
// variable whose new table would be smallest (fewest neighbour combinations). It is exact
// whenever the intermediate tables stay under a size budget, which holds for chains and
// trees (tables of two variables) and for the narrow DAGs of real models (residual
// connections add one or two variables). Past the budget it falls back to iterated
// conditional modes started from the best of the greedy and baseline assignments, so the
// result is never worse than either. A memory limit is met through a Lagrange multiplier on
// memory, found by bisection; memory is a sum of per-variable terms, so whether any
// assignment fits is decided exactly.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace twinflow::compiler {

struct MinSumProblem {
  std::vector<int> domain;                 // candidates per variable (>= 1 each)
  std::vector<std::vector<double>> unary;  // [variable][candidate]
  struct Pairwise {
    int a = 0;
    int b = 0;
    std::vector<double> cost;  // [candidate of a * domain[b] + candidate of b]
  };
  std::vector<Pairwise> pairwise;
  // Memory per variable and candidate, in groups: the limit applies to each group's sum
  // (one group per device set). Empty: no memory constraint.
  std::vector<std::vector<double>> memory;  // [variable][candidate]
  std::vector<int> memory_group;            // [variable]
  double memory_limit = std::numeric_limits<double>::infinity();
  // Assignments the result must not be worse than (e.g. pure data parallelism).
  std::vector<std::vector<int>> baselines;
};

struct MinSumSolution {
  std::vector<int> choice;  // [variable]
  double cost = 0;          // unary + pairwise
  double peak_memory = 0;   // largest group's memory
  bool exact = false;       // proven optimal (without a binding memory limit)
};

class MinSumSolver {
 public:
  explicit MinSumSolver(int64_t table_budget = 1 << 22) : table_budget_(table_budget) {}

  // Throws OutOfMemoryError naming the group and its smallest possible memory when even the
  // leanest assignment exceeds the limit.
  MinSumSolution Solve(const MinSumProblem& problem) const;

  static double Cost(const MinSumProblem& problem, const std::vector<int>& choice);
  static double PeakMemory(const MinSumProblem& problem, const std::vector<int>& choice);
  // Each variable in order takes its best candidate given the ones already chosen.
  static std::vector<int> Greedy(const MinSumProblem& problem, double lambda);

 private:
  // Minimises cost + lambda * memory; nullopt when the tables outgrow the budget.
  std::optional<std::vector<int>> Eliminate(const MinSumProblem& problem, double lambda) const;
  std::vector<int> ImproveLocally(const MinSumProblem& problem, std::vector<int> choice,
                                  double lambda) const;
  std::vector<int> Minimise(const MinSumProblem& problem, double lambda, bool& exact) const;

  int64_t table_budget_;
};

}  // namespace twinflow::compiler
