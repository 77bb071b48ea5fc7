#include "launcher/tune_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <tuple>

#include "engine/compiler/parallelism.h"
#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "launcher/cluster_args.h"
#include "launcher/cluster_plan.h"
#include "launcher/model_args.h"
#include "launcher/replica_args.h"
#include "models/strategy.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"

namespace twinflow::launcher {
namespace {

struct Candidate {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1;
  models::Schedule schedule = models::Schedule::kOneFOneB;
  int64_t vp = 1;   // model chunks per pipeline rank (interleaved 1F1B)
  bool sp = false;  // sequence parallelism
  bool recompute = false;
  std::string Text() const {
    std::string s = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) +
                    ",pp=" + std::to_string(pp) + ",mb=" + std::to_string(mb);
    if (pp > 1) s += std::string(",schedule=") + models::ScheduleName(schedule);
    if (vp > 1) s += ",vp=" + std::to_string(vp);
    if (sp) s += ",sp=true";
    return recompute ? s + ",recompute=full" : s;
  }
};

struct Outcome {
  Candidate candidate;
  bool ok = false;
  std::string why;  // when not ok
  double step_s = 0, samples_per_s = 0, mfu = 0;
  int64_t peak_bytes = 0;
  std::string parallelism;  // ParallelismTable of what the strategy really ran
};

// The pipeline schedules of `pp` ranks over `mb` micro-batches: 1F1B, GPipe, ZB-H1 and
// interleaved 1F1B with two chunks a rank (mb a multiple of pp); plain 1F1B without a pipeline.
std::vector<std::pair<models::Schedule, int64_t>> Schedules(int64_t pp, int64_t mb) {
  using models::Schedule;
  if (pp == 1) return {{Schedule::kOneFOneB, 1}};
  std::vector<std::pair<Schedule, int64_t>> out = {
      {Schedule::kOneFOneB, 1}, {Schedule::kGPipe, 1}, {Schedule::kZeroBubbleH1, 1}};
  if (mb % pp == 0) out.push_back({Schedule::kOneFOneB, 2});
  return out;
}

// Every (dp, tp, pp) whose product is the device count, tensor parallelism inside a node
// (with and without sequence parallelism), with micro-batches 1..max_mb (powers of two, at
// least pp when pipelined) and every schedule.
std::vector<Candidate> Enumerate(int64_t devices, int64_t per_node, int64_t max_mb) {
  std::vector<Candidate> out;
  for (int64_t tp = 1; tp <= std::min(devices, per_node); tp *= 2) {
    for (int64_t pp = 1; tp * pp <= devices; pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int64_t dp = devices / (tp * pp);
      for (int64_t mb = 1; mb <= max_mb; mb *= 2) {
        if (pp > 1 && mb < pp) continue;
        for (const auto& [schedule, vp] : Schedules(pp, mb)) {
          for (const bool sp : {false, true}) {
            if (sp && tp == 1) continue;
            out.push_back(Candidate{dp, tp, pp, mb, schedule, vp, sp});
          }
        }
      }
    }
  }
  return out;
}

// The flags of `twinflow tune`, declared once for parsing, the usage text and for re-parsing
// each candidate's own flags.
ArgParser TuneParser() {
  ArgParser parser(
      "twinflow tune",
      "Enumerate the (dp, tp, pp, micro-batches, schedule, vp, sp) strategies that fit a "
      "cluster, simulate each (again with recompute=full when it runs out of "
      "memory), drop those that still do, and rank the rest.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  AddFoldFlag(parser);
  parser.Optional("max-micro-batches", "N", "the most micro-batches per step to try", "8")
      .Optional("top", "N", "rows of the ranked table", "20")
      .Switch("replica",
              "simulate each strategy as one data-parallel replica (as sim --replica "
              "does): for large clusters; strategies whose dp does not divide the nodes drop")
      .Epilog(
          "example:\n  twinflow tune --model gpt --layers 4 --hidden 1024 --heads 16 "
          "--sequence 512 --batch 64 --cluster dgx-h100 --nodes 2\n"
          "  twinflow tune --model gpt --preset gpt3-175b --cluster dgx-h100 --nodes 128 "
          "--max-micro-batches 64 --replica\n");
  return parser;
}

// What every candidate's evaluation shares: the command line it extends and the cluster.
struct TuneSetting {
  const ArgParser& parser;
  const std::vector<std::string>& args;
  const sim::Topology& topology;
  const graph::OpRegistry& registry;
  const sbp::AlphaBetaConfig& cost;
  bool replica = false;
};

// Compiles and simulates one candidate: its command line is the tune flags with the
// candidate's --strategy and the cluster's --devices added. A failure drops it, with why.
Outcome Evaluate(const TuneSetting& setting, const Candidate& candidate) {
  const sim::Topology& topology = setting.topology;
  Outcome o;
  o.candidate = candidate;
  std::vector<std::string> with = setting.args;
  for (const std::string& flag : {std::string("--strategy"), o.candidate.Text(),
                                  std::string("--devices"), std::to_string(topology.devices())}) {
    with.push_back(flag);
  }
  try {
    int64_t replicas = 1;
    if (setting.replica) {
      std::tie(with, replicas) = ReplicaArgs(setting.parser, with, topology, setting.registry);
    }
    const ParsedArgs one = setting.parser.Parse(with);
    const sim::Topology cluster(ClusterFromArgs(one));  // a replica's nodes with --replica
    const models::BuiltModel model = BuildModelFromArgs(one, setting.registry);
    const compiler::Compiled compiled =
        CompileFromArgs(model, one, setting.registry, 0, &setting.cost,
                        SimulatorFold(one, model.strategy, cluster.spec()));
    const plan::Plan& plan = compiled.plan;
    o.parallelism = compiler::ParallelismTable(
        compiler::ParallelismByFamily(model.graph, setting.registry, compiled.assignment));
    sim::SimOptions options;
    options.data_parallel_replicas = static_cast<int>(replicas);
    const sim::SimResult r = sim::Simulate(plan, cluster, options);
    for (const sim::DeviceReport& d : r.devices)
      o.peak_bytes = std::max(o.peak_bytes, d.arena_bytes);
    o.step_s = r.step_s;
    o.mfu = r.mfu;
    o.samples_per_s =
        static_cast<double>(SamplesPerStep(model) * replicas) / std::max(r.step_s, 1e-12);
    if (!r.finished) {
      o.why = "deadlocks";
    } else if (o.peak_bytes > topology.spec().device().memory_bytes()) {
      o.why = "out of memory (" + FormatBytes(o.peak_bytes) + ")";
    } else {
      o.ok = true;
    }
  } catch (const Error& e) {
    o.why = e.message().substr(0, 100);
  }
  return o;
}

// One candidate's outcome; one out of memory is tried again with recompute=full, trading time
// for memory, and keeps that when it fits.
Outcome EvaluateOrRecompute(const TuneSetting& setting, const Candidate& candidate) {
  Outcome o = Evaluate(setting, candidate);
  if (o.why.starts_with("out of memory")) {
    Candidate again = candidate;
    again.recompute = true;
    const Outcome recomputed = Evaluate(setting, again);
    if (recomputed.ok) {
      o = recomputed;
    } else if (recomputed.why.starts_with("out of memory")) {
      o.why += ", " + FormatBytes(recomputed.peak_bytes) + " with recompute=full";
    }
  }
  return o;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every candidate's outcome, in candidate order, with a progress line each on stderr.
std::vector<Outcome> EvaluateAll(const TuneSetting& setting,
                                 const std::vector<Candidate>& candidates,
                                 std::chrono::steady_clock::time_point start) {
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Outcome o = EvaluateOrRecompute(setting, candidates[i]);
    const double wall = SecondsSince(start);
    const double left = wall / static_cast<double>(i + 1) *
                        static_cast<double>(candidates.size() - i - 1);  // at the pace so far
    std::cerr << "[" << i + 1 << "/" << candidates.size() << ", " << FormatSeconds(wall)
              << ", about " << FormatSeconds(left) << " left] " << o.candidate.Text() << ": "
              << (o.ok ? "step " + FormatSeconds(o.step_s) : o.why) << "\n";
    outcomes.push_back(o);
  }
  return outcomes;
}

// The ranked table of the strategies that fit (fastest first, `outcomes` sorted so), the
// parallelism of the best, and why each other one dropped.
void PrintRanking(std::ostream& out, const std::vector<Outcome>& outcomes, int64_t top) {
  TextTable table({"rank", "strategy", "step time", "samples/s", "MFU", "peak memory"});
  int64_t rank = 0;
  for (const Outcome& o : outcomes) {
    if (!o.ok || rank >= top) continue;
    ++rank;
    table.Add({std::to_string(rank), o.candidate.Text(), FormatSeconds(o.step_s),
               FormatFixed(o.samples_per_s, 1), FormatFixed(100 * o.mfu, 1) + "%",
               FormatBytes(o.peak_bytes)});
  }
  table.Print(out);
  if (!outcomes.empty() && outcomes[0].ok) {
    out << "parallelism of the forward ops of " << outcomes[0].candidate.Text()
        << ", by mesh axis (0: dp, 1: tp):\n"
        << outcomes[0].parallelism;
  }
  for (const Outcome& o : outcomes) {
    if (!o.ok) out << "dropped " << o.candidate.Text() << ": " << o.why << "\n";
  }
}

}  // namespace

int RunTuneCommand(const std::vector<std::string>& args, std::ostream& out) {
  const ArgParser parser = TuneParser();
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  if (parsed.Given("strategy")) {
    throw InvalidArgumentError("--strategy: tune chooses the strategies itself");
  }
  const sim::Topology topology(ClusterFromArgs(parsed));
  const int64_t devices = topology.devices();
  const int64_t max_mb = parsed.GetInt("max-micro-batches", 1, 1024);
  const std::vector<Candidate> candidates =
      Enumerate(devices, topology.spec().devices_per_node(), max_mb);
  const graph::OpRegistry registry = ops::BuiltinOps();
  const sbp::AlphaBetaConfig cost = sim::SearchCostConfig(topology.spec());
  const bool replica = parsed.Given("replica");
  const auto start = std::chrono::steady_clock::now();
  const TuneSetting setting{parser, args, topology, registry, cost, replica};
  std::vector<Outcome> outcomes = EvaluateAll(setting, candidates, start);
  std::stable_sort(outcomes.begin(), outcomes.end(), [](const Outcome& a, const Outcome& b) {
    if (a.ok != b.ok) return a.ok;
    return a.ok && a.step_s < b.step_s;
  });
  const double seconds = SecondsSince(start);
  const sim::ClusterSpec& spec = topology.spec();
  int64_t feasible = 0;
  for (const Outcome& o : outcomes) feasible += o.ok;
  out << "tuned " << parsed.Get("model") << " on " << spec.name() << " x " << spec.nodes()
      << " nodes (" << devices << " devices): " << feasible << " of " << outcomes.size()
      << " strategies fit, " << FormatSeconds(seconds) << " ("
      << FormatFixed(60.0 * static_cast<double>(outcomes.size()) / std::max(seconds, 1e-9), 1)
      << " configurations per minute); optimizer " << OptimizerLabelFromArgs(parsed) << "\n";
  if (replica) {
    out << "each strategy simulated as one data-parallel replica, its gradients all-reduced over "
           "the dp replicas\n";
  }
  PrintRanking(out, outcomes, parsed.GetInt("top", 1, 1 << 20));
  return feasible > 0 ? 0 : 1;
}

}  // namespace twinflow::launcher
