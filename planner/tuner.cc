#include "planner/tuner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <optional>
#include <sstream>

#include "engine/compiler/parallelism.h"
#include "engine/core/error.h"
#include "engine/core/text_format.h"
#include "planner/throughput.h"
#include "planner/tune_screen.h"
#include "simulator/sim_executor.h"

namespace twinflow::planner {
namespace {

using parallel::Strategy;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Candidates are evaluated in batches of this many, fastest bound first; each batch's bar is
// the top's slowest step among the batches before it. A fixed size, not the member count, so
// that any number of members decides alike and gathers the ranking one process would.
constexpr size_t kBatch = 8;

// An evaluation's figures into its outcome.
void Take(const Throughput& t, Outcome& o) {
  o.step_s = t.step_s;
  o.mfu = t.mfu;
  o.samples_per_s = t.samples_per_s;
  o.tokens_per_device_s = t.tokens_per_device_s;
  o.model_flops_per_device_s = t.model_flops_per_device_s;
}

}  // namespace

struct Tuner::State {
  const ModelBuilder& build;
  const graph::OpRegistry& registry;
  const sim::Topology& topology;
  TuneOptions options;
  Screens screens;
  SearchCache searches;

  State(const ModelBuilder& b, const graph::OpRegistry& r, const sim::Topology& t, TuneOptions o)
      : build(b), registry(r), topology(t), options(std::move(o)), screens(r, t.spec()) {}

  const Screen& ScreenOf(const Strategy& c, std::optional<models::BuiltModel>& model) {
    return screens.Of(
        c, [&] { return build(c); }, model);
  }
  // Compiled with `search`'s SBP search; the largest arena, and the simulation unless that
  // passes `usable` (0: simulated whatever it holds).
  struct Trial {
    int64_t arena = 0;            // the largest
    std::vector<int64_t> arenas;  // by Plan device
    std::optional<sim::SimResult> result;
    std::string parallelism;
  };
  Trial Try(const models::BuiltModel& built, SearchCache::Entry& search, int64_t usable);
  Outcome Evaluate(const Strategy& candidate, int64_t index, double to_beat);
  void Simulated(const Strategy& candidate, std::optional<models::BuiltModel>& model, Outcome& o);
  bool Estimated(const Strategy& candidate, const Screen& screen, Outcome& o);

  std::array<SearchCache, 2> proxy_searches;  // by the proxies' layers (k1, k2)
  std::vector<double> ordered_bounds;         // Order's bounds, in its order
};

Tuner::State::Trial Tuner::State::Try(const models::BuiltModel& built, SearchCache::Entry& search,
                                      int64_t usable) {
  ModelCompileOptions compile;
  compile.search.shared_times = searches.times();
  compile.fold = SimulationFold(options.fold, built.strategy, topology.spec());
  compile.searched = search.assignment ? &*search.assignment : nullptr;
  compile.stamp_hash = false;  // a tune ranks Plans it never saves or compares
  const compiler::Compiled compiled = CompileModel(built, registry, options.cost, compile);
  if (!search.assignment) search.assignment = compiled.assignment;
  Trial trial;
  trial.parallelism = compiler::ParallelismTable(
      compiler::ParallelismByFamily(built.graph, registry, compiled.assignment));
  trial.arenas.assign(static_cast<size_t>(compiled.plan.devices_size()), 0);
  for (const plan::MemoryPlan& m : compiled.plan.memory()) {
    trial.arena = std::max(trial.arena, m.arena_bytes());
    trial.arenas[static_cast<size_t>(m.device())] = m.arena_bytes();
  }
  if (usable == 0 || trial.arena <= usable) {
    trial.result = sim::Simulate(compiled.plan, topology, sim::SimOptions{});
  }
  return trial;
}

// The candidate from its four proxies (proxy_estimate.h) into `o`; false (o untouched) where
// they cannot tell: a proxy does not finish, or the estimated arena is too near the device's.
bool Tuner::State::Estimated(const Strategy& candidate, const Screen& screen, Outcome& o) {
  const ProxyPlan plan = PlanProxies(candidate, options.layers, options.batch);
  if (!plan.usable) return false;
  ProxyValues step{}, flops{};
  std::array<std::vector<int64_t>, 2> arenas;  // at m2, by k
  std::string parallelism;
  try {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const Strategy proxy = plan.Strategy(candidate, j);
        SearchCache::Entry& entry = proxy_searches[static_cast<size_t>(i)].For(proxy);
        if (!entry.model) entry.model.emplace(options.proxy(proxy, plan.Extent(i, j)));
        entry.model->strategy.schedule = proxy.schedule;
        const Trial trial = Try(*entry.model, entry, 0);
        if (!trial.result->finished) return false;
        step[i][j] = trial.result->step_s;
        flops[i][j] = trial.result->flops_per_step;
        if (j == 1) arenas[static_cast<size_t>(i)] = trial.arenas;
        parallelism = trial.parallelism;
      }
    }
  } catch (const Error&) {
    return false;  // a proxy the builder or compiler refuses: the whole model says why, if so
  }
  const int64_t usable = sim::UsableMemoryBytes(topology.spec());
  const int64_t estimated = EstimatedArena(plan, arenas[0], arenas[1]);
  const ArenaCall call = CallArena(estimated, usable);
  if (call == ArenaCall::kUnsure) return false;
  o.peak_bytes = estimated;
  o.estimated = true;
  if (call == ArenaCall::kOutOfMemory) {
    o.verdict = Verdict::kOutOfMemory;
    o.why = "out of memory (about " + FormatBytes(estimated) + ", estimated from its proxies)";
    return true;
  }
  const double step_s = Bilinear(plan, step, candidate.micro_batches);
  const double peak = topology.spec().device().peak_flops();
  const auto devices = static_cast<double>(topology.devices());
  const double mfu = Bilinear(plan, flops, candidate.micro_batches) / (step_s * devices * peak);
  Take(ThroughputOf(screen.step, step_s, mfu, topology.devices()), o);
  o.parallelism = parallelism;
  o.verdict = Verdict::kRanked;
  return true;
}

// Compiles `candidate` (its model in `model` when the screen built it) into `o`, and simulates
// it when its arenas fit: a Plan's memory is known once it is compiled (the arenas the
// simulator reports are the Plan's), and a fifth to a half of a large model's compiled
// candidates do not fit (116 of 279 on Llama-3-8B over 64 GPUs), so their simulation would
// only repeat what the Plan says.
void Tuner::State::Simulated(const Strategy& candidate, std::optional<models::BuiltModel>& model,
                             Outcome& o) {
  SearchCache::Entry& entry = searches.For(candidate);
  if (!entry.model) entry.model.emplace(model ? std::move(*model) : build(candidate));
  entry.model->strategy.schedule = candidate.schedule;  // what the lowering reads of it
  const models::BuiltModel& built = *entry.model;
  const int64_t usable = sim::UsableMemoryBytes(topology.spec());
  const Trial trial = Try(built, entry, usable);
  o.estimated = false;
  o.parallelism = trial.parallelism;
  o.peak_bytes = trial.arena;
  if (!trial.result) {
    o.verdict = Verdict::kOutOfMemory;
    o.why = "out of memory (" + FormatBytes(o.peak_bytes) + ")";
    return;
  }
  const sim::SimResult& r = *trial.result;
  Take(ThroughputOf(built, r, topology.devices()), o);
  o.verdict = r.finished ? Verdict::kRanked : Verdict::kDeadlocks;
  o.why = r.finished ? "" : "deadlocks";
}

// One candidate, unless its screen shows it cannot fit or cannot step faster than `to_beat`.
Outcome Tuner::State::Evaluate(const Strategy& candidate, int64_t index, double to_beat) {
  Outcome o;
  o.index = index;
  o.candidate = candidate;
  try {
    std::optional<models::BuiltModel> model;
    const Screen& screen = ScreenOf(candidate, model);
    if (!screen.error.empty()) {
      o.why = screen.error;
      return o;
    }
    // The floor may not fit: then no Plan of this strategy does, and compiling and simulating
    // it (seconds to minutes at cluster scale) would only say so.
    if (const int64_t floor = FloorBytes(screen, candidate);
        floor > sim::UsableMemoryBytes(topology.spec())) {
      o.verdict = Verdict::kOutOfMemory;
      o.peak_bytes = floor;
      o.why = "out of memory (at least " + FormatBytes(floor) +
              " of variables and kept activations, not compiled)";
      return o;
    }
    o.bound_s = BoundSeconds(screen, candidate);
    if (const double bound = o.bound_s; bound > to_beat) {
      o.verdict = Verdict::kNotSimulated;
      o.why = NotSimulatedWhy(bound, to_beat, options.top);
      return o;
    }
    if (!(options.proxy && Estimated(candidate, screen, o))) Simulated(candidate, model, o);
  } catch (const Error& e) {
    o = Outcome{index, candidate, Verdict::kRefused, DroppedWhy(e)};
  }
  return o;
}

std::string ProgressLine(const TuneProgress& p) {
  const Outcome& o = *p.outcome;
  std::ostringstream line;
  line << "["
       << (p.members > 1 ? std::string(p.member_noun) + " " + std::to_string(p.member) + ": " : "")
       << p.done << "/" << p.share << ", " << FormatSeconds(p.wall_s) << ", about "
       << FormatSeconds(p.left_s) << " left] " << o.candidate.Compact() << ": "
       << (o.ok() ? "step " + FormatSeconds(o.step_s) : o.why) << "\n";
  return line.str();
}

Tuner::Tuner(const ModelBuilder& build, const graph::OpRegistry& registry,
             const sim::Topology& topology, TuneOptions options)
    : state_(std::make_unique<State>(build, registry, topology, std::move(options))) {}

Tuner::~Tuner() = default;

namespace {

// Every member's outcomes of one batch, on every member (one: its own).
std::vector<Outcome> Gathered(const std::vector<Outcome>& mine,
                              const std::vector<Strategy>& candidates, TuneGroup& group) {
  if (group.size() == 1) return mine;
  std::vector<Outcome> all;
  for (const std::string& text : group.Allgather(EncodeOutcomes(mine))) {
    for (Outcome& o : DecodeOutcomes(text, candidates)) all.push_back(std::move(o));
  }
  return all;
}

// Whether any member was asked to stop (one process: this one).
bool AnyStopped(TuneGroup& group, bool stopped) {
  if (group.size() == 1) return stopped;
  for (const std::string& flag : group.Allgather(stopped ? "1" : "0")) {
    if (flag == "1") return true;
  }
  return false;
}

std::vector<Outcome> Ranked(std::vector<Outcome> outcomes) {
  RankOutcomes(outcomes);
  return outcomes;
}

}  // namespace

std::vector<int64_t> Tuner::Order(const std::vector<Strategy>& candidates, const TuneHooks& hooks,
                                  bool stoppable) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<double, int64_t>> keyed;
  for (size_t i = 0; i < candidates.size() && !(stoppable && hooks.stop && hooks.stop()); ++i) {
    std::optional<models::BuiltModel> unused;
    keyed.push_back({BoundSeconds(state_->ScreenOf(candidates[i], unused), candidates[i]),
                     static_cast<int64_t>(i)});
  }
  std::sort(keyed.begin(), keyed.end());
  if (hooks.screened) hooks.screened(keyed.size(), SecondsSince(start));
  std::vector<int64_t> order;
  state_->ordered_bounds.clear();
  for (const auto& [bound, index] : keyed) {
    order.push_back(index);
    state_->ordered_bounds.push_back(bound);
  }
  return order;
}

namespace {

// The time left of a member's share after place `p` of the order: the seconds its evaluations
// took on average (pruned candidates aside: they take none) times the candidates of its share
// still under `to_beat` by their bound (the order is by bound, and the bar only falls, so the
// rest will not be simulated).
double SecondsLeft(const std::vector<double>& ordered_bounds, size_t p, double to_beat, int member,
                   int members, double eval_s, int64_t evals) {
  if (evals == 0) return 0;
  const auto limit =
      static_cast<size_t>(std::upper_bound(ordered_bounds.begin(), ordered_bounds.end(), to_beat) -
                          ordered_bounds.begin());
  int64_t left = 0;
  for (size_t q = p + 1; q < limit; ++q) left += static_cast<int>(q % members) == member;
  return eval_s / static_cast<double>(evals) * static_cast<double>(left);
}

}  // namespace

std::vector<Outcome> Tuner::Run(const std::vector<Strategy>& candidates,
                                const std::vector<int64_t>& order, TuneGroup& group,
                                const TuneHooks& hooks) {
  const auto start = std::chrono::steady_clock::now();
  const auto stop = [&] { return hooks.stop && hooks.stop(); };
  const int member = group.member(), members = group.size();
  TuneProgress line{member, members, group.member_noun()};
  for (size_t p = member; p < order.size(); p += members) ++line.share;
  std::vector<Outcome> done;
  double eval_s = 0;  // the member's evaluations that were not pruned, and their seconds
  int64_t evals = 0;
  for (size_t first = 0; first < order.size(); first += kBatch) {
    const double to_beat = state_->options.exhaustive ? std::numeric_limits<double>::infinity()
                                                      : StepToBeat(done, state_->options.top);
    std::vector<Outcome> batch;
    for (size_t p = first; p < std::min(first + kBatch, order.size()) && !stop(); ++p) {
      // Round robin: contiguous runs would keep a strategy's schedules (one SBP search) on one
      // member, but balance worse; measured 10% slower at 1,024 GPUs.
      if (static_cast<int>(p % members) != member) continue;
      const int64_t index = order[p];
      const double before = SecondsSince(start);
      batch.push_back(state_->Evaluate(candidates[index], index, to_beat));
      line.done++;
      line.wall_s = SecondsSince(start);
      if (batch.back().verdict != Verdict::kNotSimulated) {
        eval_s += line.wall_s - before;
        ++evals;
      }
      // An order not Order's (no bounds kept): the share's pace so far.
      line.left_s =
          state_->ordered_bounds.size() == order.size()
              ? SecondsLeft(state_->ordered_bounds, p, to_beat, member, members, eval_s, evals)
              : line.wall_s / static_cast<double>(line.done) *
                    static_cast<double>(line.share - line.done);
      line.outcome = &batch.back();
      if (hooks.progress) hooks.progress(line);
    }
    for (Outcome& o : Gathered(batch, candidates, group)) done.push_back(std::move(o));
    if (AnyStopped(group, stop())) return Ranked(std::move(done));
  }
  Confirm(candidates, done, group);
  return done;
}

// Until the top `top` rows are all simulated whole: each estimated row among them is (round
// robin over the members, as the batches), and the ranking is redrawn. An estimate is within
// a fraction of a percent (proxy_estimate.h), so one round is the rule.
void Tuner::Confirm(const std::vector<Strategy>& candidates, std::vector<Outcome>& done,
                    TuneGroup& group) {
  const int member = group.member(), members = group.size();
  for (;;) {
    RankOutcomes(done);
    std::vector<size_t> redo;  // places in `done`
    for (size_t i = 0; i < done.size() && static_cast<int64_t>(i) < state_->options.top; ++i) {
      if (!done[i].ok()) break;
      if (done[i].estimated) redo.push_back(i);
    }
    if (redo.empty()) return;
    std::vector<Outcome> mine;
    for (size_t p = member; p < redo.size(); p += members) {
      Outcome o = done[redo[p]];
      try {
        std::optional<models::BuiltModel> none;
        state_->Simulated(o.candidate, none, o);
      } catch (const Error& e) {
        o = Outcome{o.index, o.candidate, Verdict::kRefused, DroppedWhy(e)};
      }
      mine.push_back(std::move(o));
    }
    for (Outcome& o : Gathered(mine, candidates, group)) {
      for (Outcome& d : done) {
        if (d.index == o.index) d = std::move(o);
      }
    }
  }
}

}  // namespace twinflow::planner
