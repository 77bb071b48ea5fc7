#pragma once
// The tuner both front ends drive (`twinflow tune`, `tw.tune`): it screens every candidate by
// its model (memory floor, step-time bound), evaluates them fastest bound first in batches,
// compiling and simulating each that could still rank (branch and bound: a candidate whose
// bound is slower than the top's slowest is not simulated), and ranks those that fit. ZeRO-1
// and recomputation are candidates' own fields (tune_candidates.h), not retries. Outcomes are
// typed (tune_outcome.h); the same inputs rank identically from either front end, and across
// any number of processes sharing the candidates (tune_group.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/op_registry.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/compile_model.h"
#include "planner/proxy_estimate.h"
#include "planner/tune_group.h"
#include "planner/tune_outcome.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::planner {

// Builds the model of one candidate (a resolved strategy over the cluster's devices); an Error
// it throws drops the candidate with its first line.
using ModelBuilder = std::function<models::BuiltModel(const parallel::Strategy&)>;

struct TuneOptions {
  sbp::AlphaBetaConfig cost;  // the search's: the cluster's own (sim::SearchCostConfig)
  int64_t top = 20;           // rows ranked: a candidate that cannot join them is not simulated
  bool exhaustive = false;    // simulate every candidate that fits
  FoldMode fold = FoldMode::kDataParallel;
  // Proxy estimates (proxy_estimate.h) for the candidates they suit, from the model's layers
  // and global batch; empty: every candidate compiled and simulated whole.
  ProxyBuilder proxy;
  int64_t layers = 0, batch = 0;
};

// One line of progress: the member's share done, its wall time and the time left (its
// evaluations' average times its candidates still under the bar by their bound).
struct TuneProgress {
  int member = 0, members = 1;
  const char* member_noun = "job";  // TuneGroup::member_noun: "job", "rank"
  int64_t done = 0, share = 0;
  double wall_s = 0, left_s = 0;
  const Outcome* outcome = nullptr;  // the candidate just evaluated
};

// The progress line both front ends print (newline-ended, written whole: jobs share a terminal):
// "[job 1: 3/98, 1.2 s, about 40 s left] dp=...: step 7.74 s".
std::string ProgressLine(const TuneProgress& progress);

struct TuneHooks {
  std::function<void(const TuneProgress&)> progress;  // after each candidate (may be empty)
  std::function<void(size_t screened, double seconds)> screened;  // after the screen
  std::function<bool()> stop;  // polled between candidates: Ctrl-C (may be empty)
};

// Lifetime: keeps `registry`, `topology` and `build` by reference; each must outlive it.
class Tuner {
 public:
  Tuner(const ModelBuilder& build, const graph::OpRegistry& registry, const sim::Topology& topology,
        TuneOptions options);
  ~Tuner();

  // The order the candidates are evaluated in: the fastest step-time bound first (then
  // candidate order), so that the strategies that will rank come early and raise the bar for
  // the rest. Screen before forking a group (ForkTune), so that every member shares the screens
  // and the order; `stoppable`: hooks.stop may cut it short (one process alone).
  std::vector<int64_t> Order(const std::vector<parallel::Strategy>& candidates,
                             const TuneHooks& hooks, bool stoppable);
  // The outcomes of the candidates in `order`, every member's, ranked (RankOutcomes). `group`
  // shares them out; fewer than order.size() when stopped.
  std::vector<Outcome> Run(const std::vector<parallel::Strategy>& candidates,
                           const std::vector<int64_t>& order, TuneGroup& group,
                           const TuneHooks& hooks);

 private:
  void Confirm(const std::vector<parallel::Strategy>& candidates, std::vector<Outcome>& done,
               TuneGroup& group);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace twinflow::planner
