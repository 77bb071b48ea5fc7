#include "engine/compiler/min_sum_solver.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

// A table over some variables (sorted), row-major in their candidates.
struct Factor {
  std::vector<int> vars;
  std::vector<double> table;
};

double UnaryWithMemory(const MinSumProblem& p, int v, int c, double lambda) {
  double cost = p.unary[v][c];
  if (lambda > 0 && !p.memory.empty()) cost += lambda * p.memory[v][c];
  return cost;
}

// Neighbours of each variable through pairwise terms, with the term index.
std::vector<std::vector<std::pair<int, int>>> Adjacency(const MinSumProblem& p) {
  std::vector<std::vector<std::pair<int, int>>> adjacent(p.domain.size());
  for (size_t t = 0; t < p.pairwise.size(); ++t) {
    adjacent[p.pairwise[t].a].emplace_back(p.pairwise[t].b, static_cast<int>(t));
    if (p.pairwise[t].a != p.pairwise[t].b) {
      adjacent[p.pairwise[t].b].emplace_back(p.pairwise[t].a, static_cast<int>(t));
    }
  }
  return adjacent;
}

double PairCost(const MinSumProblem& p, int term, int v, int cv, int other, int co) {
  const auto& pair = p.pairwise[term];
  return pair.a == v ? pair.cost[cv * p.domain[pair.b] + co]
                     : pair.cost[co * p.domain[pair.b] + cv];
}

// Cost of variable v taking c given the others' current choices (chosen[u] < 0: unset).
double LocalCost(const MinSumProblem& p, const std::vector<std::vector<std::pair<int, int>>>& adj,
                 const std::vector<int>& chosen, int v, int c, double lambda) {
  double cost = UnaryWithMemory(p, v, c, lambda);
  for (const auto& [u, term] : adj[v]) {
    if (u == v) {
      cost += p.pairwise[term].cost[c * p.domain[v] + c];
    } else if (chosen[u] >= 0) {
      cost += PairCost(p, term, v, c, u, chosen[u]);
    }
  }
  return cost;
}

int64_t TableSize(const std::vector<int>& vars, const std::vector<int>& domain) {
  int64_t size = 1;
  for (int v : vars) size *= domain[v];
  return size;
}

// The factors under elimination, and which alive ones touch each variable.
struct FactorSet {
  std::vector<Factor> factors;
  std::vector<std::set<int>> factors_of;  // alive factor ids per variable

  void Add(Factor f) {
    for (int v : f.vars) factors_of[v].insert(static_cast<int>(factors.size()));
    factors.push_back(std::move(f));
  }
  // The alive factors of v, which its elimination sums into one.
  std::vector<int> Involved(int v) const {
    return std::vector<int>(factors_of[v].begin(), factors_of[v].end());
  }
  // The variables v shares a factor with: the scope of the table eliminating v creates.
  std::vector<int> ScopeOf(int v) const {
    std::set<int> scope;
    for (int f : factors_of[v]) {
      for (int u : factors[f].vars) {
        if (u != v) scope.insert(u);
      }
    }
    return std::vector<int>(scope.begin(), scope.end());
  }
  // Ends the factors of v: they have been summed into a new one.
  void Retire(int v) {
    for (int f : Involved(v)) {
      for (int u : factors[f].vars) factors_of[u].erase(f);
    }
  }
};

// An eliminated variable's best candidate for each assignment of its scope (row-major).
struct Record {
  int var;
  std::vector<int> scope;
  std::vector<int> argmin;
};

// A pairwise term as a factor over its variables, sorted.
Factor PairwiseFactor(const MinSumProblem& p, const MinSumProblem::Pairwise& pair) {
  Factor f;
  const int a = std::min(pair.a, pair.b), b = std::max(pair.a, pair.b);
  // A variable with one candidate (a pinned op) is no choice at all: its terms become unary
  // terms of its neighbours, so it never joins a larger table.
  if (a != b && (p.domain[a] == 1 || p.domain[b] == 1)) {
    const int free = p.domain[a] == 1 ? b : a;
    f.vars = {free};
    for (int c = 0; c < p.domain[free]; ++c) {
      const int ca = free == a ? c : 0, cb = free == b ? c : 0;
      f.table.push_back(pair.a == a ? pair.cost[ca * p.domain[b] + cb]
                                    : pair.cost[cb * p.domain[a] + ca]);
    }
    return f;
  }
  if (a == b) {
    f.vars = {a};
    for (int c = 0; c < p.domain[a]; ++c) f.table.push_back(pair.cost[c * p.domain[a] + c]);
    return f;
  }
  f.vars = {a, b};
  f.table.resize(static_cast<size_t>(p.domain[a]) * p.domain[b]);
  for (int ca = 0; ca < p.domain[a]; ++ca) {
    for (int cb = 0; cb < p.domain[b]; ++cb) {
      f.table[ca * p.domain[b] + cb] =
          pair.a == a ? pair.cost[ca * p.domain[b] + cb] : pair.cost[cb * p.domain[a] + ca];
    }
  }
  return f;
}

// The problem as factors: one unary factor a variable (memory weighed by lambda), then one a
// pairwise term.
FactorSet InitialFactors(const MinSumProblem& p, double lambda) {
  const int n = static_cast<int>(p.domain.size());
  FactorSet set;
  set.factors_of.resize(n);
  for (int v = 0; v < n; ++v) {
    Factor f{{v}, {}};
    for (int c = 0; c < p.domain[v]; ++c) f.table.push_back(UnaryWithMemory(p, v, c, lambda));
    set.Add(std::move(f));
  }
  for (const auto& pair : p.pairwise) set.Add(PairwiseFactor(p, pair));
  return set;
}

// The variables each one shares a table with; pinned variables and self-terms join none.
std::vector<std::set<int>> Neighbours(const MinSumProblem& p) {
  std::vector<std::set<int>> neighbours(p.domain.size());
  for (const auto& pair : p.pairwise) {
    if (pair.a == pair.b || p.domain[pair.a] == 1 || p.domain[pair.b] == 1) continue;
    neighbours[pair.a].insert(pair.b);
    neighbours[pair.b].insert(pair.a);
  }
  return neighbours;
}

// The size of the table eliminating v would create: the min-degree order's key.
double TableWeight(const MinSumProblem& p, const std::vector<std::set<int>>& neighbours, int v) {
  double w = 1;
  for (int u : neighbours[v]) w *= p.domain[u];
  return w;
}

// Once v is eliminated its neighbours all share its new table.
void ConnectScope(std::vector<std::set<int>>& neighbours, int v, const std::vector<int>& scope) {
  for (int u : scope) {
    neighbours[u].erase(v);
    for (int x : scope) {
      if (x != u) neighbours[u].insert(x);
    }
  }
}

// Sums v's factors and minimises over v: a table over `scope` (of `size` rows), and v's best
// candidate for each row. A factor's entry for a row and candidate c is its row's offset plus
// c times v's stride in it, so each row costs one pass over the factors' variables and then
// one addition per factor and candidate. `assignment` is scratch of one entry per variable,
// kept across calls (a fresh one per call would cost O(variables) each time).
std::pair<Factor, Record> MinimiseOut(const MinSumProblem& p, const FactorSet& set, int v,
                                      const std::vector<int>& scope, int64_t size,
                                      std::vector<int>& assignment) {
  const std::vector<int> involved = set.Involved(v);
  Factor result{scope, std::vector<double>(size)};
  Record record{v, scope, std::vector<int>(size)};
  std::vector<int64_t> stride(involved.size(), 0), offset(involved.size(), 0);
  for (size_t i = 0; i < involved.size(); ++i) {
    int64_t s = 1;
    const std::vector<int>& vars = set.factors[involved[i]].vars;
    for (auto u = vars.rbegin(); u != vars.rend(); ++u) {
      if (*u == v) stride[i] = s;
      s *= p.domain[*u];
    }
  }
  for (int64_t index = 0; index < size; ++index) {
    int64_t rest = index;
    for (int k = static_cast<int>(scope.size()) - 1; k >= 0; --k) {
      assignment[scope[k]] = static_cast<int>(rest % p.domain[scope[k]]);
      rest /= p.domain[scope[k]];
    }
    assignment[v] = 0;
    for (size_t i = 0; i < involved.size(); ++i) {
      int64_t at = 0;
      for (int u : set.factors[involved[i]].vars) at = at * p.domain[u] + assignment[u];
      offset[i] = at;
    }
    double best = std::numeric_limits<double>::infinity();
    int best_c = 0;
    for (int c = 0; c < p.domain[v]; ++c) {
      double total = 0;
      for (size_t i = 0; i < involved.size(); ++i) {
        total += set.factors[involved[i]].table[offset[i] + c * stride[i]];
      }
      if (total < best) {
        best = total;
        best_c = c;
      }
    }
    result.table[index] = best;
    record.argmin[index] = best_c;
  }
  return {std::move(result), std::move(record)};
}

// The optimal choice, from the last eliminated variable back to the first: each takes its
// argmin given the later ones' choices.
std::vector<int> BackSubstitute(const MinSumProblem& p, const std::vector<Record>& records) {
  std::vector<int> choice(p.domain.size(), 0);
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    int64_t index = 0;
    for (int u : it->scope) index = index * p.domain[u] + choice[u];
    choice[it->var] = it->argmin[index];
  }
  return choice;
}

}  // namespace

double MinSumSolver::Cost(const MinSumProblem& p, const std::vector<int>& choice) {
  double cost = 0;
  for (size_t v = 0; v < p.domain.size(); ++v) cost += p.unary[v][choice[v]];
  for (const auto& pair : p.pairwise) {
    cost += pair.cost[choice[pair.a] * p.domain[pair.b] + choice[pair.b]];
  }
  return cost;
}

double MinSumSolver::PeakMemory(const MinSumProblem& p, const std::vector<int>& choice) {
  if (p.memory.empty()) return 0;
  std::map<int, double> groups;
  for (size_t v = 0; v < p.domain.size(); ++v) {
    groups[p.memory_group.empty() ? 0 : p.memory_group[v]] += p.memory[v][choice[v]];
  }
  double peak = 0;
  for (const auto& [group, bytes] : groups) peak = std::max(peak, bytes);
  return peak;
}

std::vector<int> MinSumSolver::Greedy(const MinSumProblem& p, double lambda) {
  const auto adjacent = Adjacency(p);
  std::vector<int> chosen(p.domain.size(), -1);
  for (size_t v = 0; v < p.domain.size(); ++v) {
    int best = 0;
    double best_cost = 0;
    for (int c = 0; c < p.domain[v]; ++c) {
      const double cost = LocalCost(p, adjacent, chosen, static_cast<int>(v), c, lambda);
      if (c == 0 || cost < best_cost) {
        best = c;
        best_cost = cost;
      }
    }
    chosen[v] = best;
  }
  return chosen;
}

std::vector<int> MinSumSolver::ImproveLocally(const MinSumProblem& p, std::vector<int> choice,
                                              double lambda) const {
  const auto adjacent = Adjacency(p);
  for (int pass = 0; pass < 100; ++pass) {
    bool changed = false;
    for (size_t v = 0; v < p.domain.size(); ++v) {
      const int current = choice[v];
      double best_cost = LocalCost(p, adjacent, choice, static_cast<int>(v), current, lambda);
      for (int c = 0; c < p.domain[v]; ++c) {
        const double cost = LocalCost(p, adjacent, choice, static_cast<int>(v), c, lambda);
        if (cost < best_cost - 1e-12 * std::fabs(best_cost)) {
          best_cost = cost;
          choice[v] = c;
        }
      }
      changed = changed || choice[v] != current;
    }
    if (!changed) break;
  }
  return choice;
}

std::optional<std::vector<int>> MinSumSolver::Eliminate(const MinSumProblem& p,
                                                        double lambda) const {
  const int n = static_cast<int>(p.domain.size());
  FactorSet set = InitialFactors(p, lambda);
  // Min-degree order by the size of the table eliminating a variable would create; a queue
  // entry is stale once its variable's weight was queued again.
  std::vector<std::set<int>> neighbours = Neighbours(p);
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  std::vector<double> queued(n);
  for (int v = 0; v < n; ++v) queue.emplace(queued[v] = TableWeight(p, neighbours, v), v);
  std::vector<bool> eliminated(n, false);
  std::vector<Record> records;
  std::vector<int> assignment(n, 0);  // MinimiseOut's scratch
  while (!queue.empty()) {
    const auto [w, v] = queue.top();
    queue.pop();
    if (eliminated[v] || w != queued[v]) continue;
    const std::vector<int> scope = set.ScopeOf(v);
    const int64_t size = TableSize(scope, p.domain);
    if (size * p.domain[v] > table_budget_) return std::nullopt;
    auto [result, record] = MinimiseOut(p, set, v, scope, size, assignment);
    set.Retire(v);
    eliminated[v] = true;
    ConnectScope(neighbours, v, scope);
    set.Add(std::move(result));
    records.push_back(std::move(record));
    for (int u : scope) queue.emplace(queued[u] = TableWeight(p, neighbours, u), u);
  }
  return BackSubstitute(p, records);
}

std::vector<int> MinSumSolver::Minimise(const MinSumProblem& p, double lambda, bool& exact) const {
  if (auto choice = Eliminate(p, lambda)) {
    exact = true;
    return *choice;
  }
  exact = false;
  std::vector<int> start = Greedy(p, lambda);
  const auto penalised = [&](const std::vector<int>& c) {
    return Cost(p, c) + (lambda > 0 ? lambda * PeakMemory(p, c) : 0.0);
  };
  for (const auto& baseline : p.baselines) {
    if (penalised(baseline) < penalised(start)) start = baseline;
  }
  return ImproveLocally(p, std::move(start), lambda);
}

MinSumSolution MinSumSolver::Solve(const MinSumProblem& p) const {
  for (size_t v = 0; v < p.domain.size(); ++v) {
    if (p.domain[v] < 1 || static_cast<int>(p.unary[v].size()) != p.domain[v]) {
      throw InvalidArgumentError("min-sum problem: variable " + std::to_string(v) +
                                 " has no candidates or a unary table of the wrong size");
    }
  }
  const bool limited = !p.memory.empty() && std::isfinite(p.memory_limit);
  MinSumSolution solution;
  if (limited) {
    // Memory is additive per variable, so the leanest assignment is each variable's leanest
    // candidate: if that does not fit, nothing does.
    std::map<int, double> least;
    for (size_t v = 0; v < p.domain.size(); ++v) {
      least[p.memory_group.empty() ? 0 : p.memory_group[v]] +=
          *std::min_element(p.memory[v].begin(), p.memory[v].end());
    }
    for (const auto& [group, bytes] : least) {
      if (bytes > p.memory_limit) {
        throw OutOfMemoryError("no layout fits the memory limit: device group " +
                               std::to_string(group) + " needs at least " +
                               std::to_string(static_cast<int64_t>(bytes)) +
                               " bytes per device, the limit is " +
                               std::to_string(static_cast<int64_t>(p.memory_limit)));
      }
    }
  }
  solution.choice = Minimise(p, 0.0, solution.exact);
  if (limited && PeakMemory(p, solution.choice) > p.memory_limit) {
    solution.exact = false;
    // Bisection on the price of a byte: the cheapest assignment that fits.
    double lo = 0, hi = 1e-12;
    std::optional<std::vector<int>> fitting;
    bool unused;
    for (int i = 0; i < 80 && !fitting; ++i, hi *= 4) {
      std::vector<int> c = Minimise(p, hi, unused);
      if (PeakMemory(p, c) <= p.memory_limit) fitting = c;
    }
    if (!fitting) {
      std::vector<int> leanest(p.domain.size());
      for (size_t v = 0; v < p.domain.size(); ++v) {
        leanest[v] = static_cast<int>(std::min_element(p.memory[v].begin(), p.memory[v].end()) -
                                      p.memory[v].begin());
      }
      fitting = leanest;
    } else {
      hi /= 4;
      for (int i = 0; i < 40; ++i) {
        const double mid = (lo + hi) / 2;
        std::vector<int> c = Minimise(p, mid, unused);
        if (PeakMemory(p, c) <= p.memory_limit) {
          hi = mid;
          if (Cost(p, c) < Cost(p, *fitting)) fitting = c;
        } else {
          lo = mid;
        }
      }
    }
    solution.choice = *fitting;
  }
  for (const auto& baseline : p.baselines) {
    if ((!limited || PeakMemory(p, baseline) <= p.memory_limit) &&
        Cost(p, baseline) < Cost(p, solution.choice)) {
      solution.choice = baseline;
      solution.exact = false;
    }
  }
  solution.cost = Cost(p, solution.choice);
  solution.peak_memory = PeakMemory(p, solution.choice);
  return solution;
}

}  // namespace twinflow::compiler
