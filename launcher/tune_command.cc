#include "launcher/tune_command.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "engine/comm/mpi_session.h"
#include "engine/compiler/parallelism.h"
#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "launcher/cluster_args.h"
#include "launcher/cluster_plan.h"
#include "launcher/model_args.h"
#include "launcher/startup_agreement.h"
#include "launcher/tune_group.h"
#include "launcher/tune_outcome.h"
#include "launcher/tune_screen.h"
#include "models/strategy.h"
#include "models/tune_candidates.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"

namespace twinflow::launcher {
namespace {

// The flags of `twinflow tune`, declared once for parsing, the usage text and for re-parsing
// each candidate's own flags.
ArgParser TuneParser() {
  ArgParser parser(
      "twinflow tune",
      "Enumerate the (dp, tp, pp, micro-batches, schedule, vp, sp) strategies that fit a "
      "cluster, simulate each (again with zero=1, then recompute=full, when it runs out of "
      "memory), drop those that still do, and rank the rest. Each is screened by its model "
      "first: one whose memory floor passes the device's is not compiled, and one whose "
      "kernels alone are slower than the top is not simulated (--exhaustive simulates all). "
      "Under mpirun the ranks share the candidates and rank 0 prints the ranking one rank "
      "would. Ctrl-C stops after the candidate in progress and ranks those done.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  AddFoldFlag(parser);
  parser.Optional("max-micro-batches", "N", "the most micro-batches per step to try", "8")
      .Optional("jobs", "N",
                "processes sharing the candidates, forked from this one (the ranking is one "
                "process's bit for bit; not under mpirun, whose ranks share them) (default: this "
                "machine's cores, at most 8 and one per 2 GiB of memory)")
      .Optional("top", "N", "rows of the ranked table", "20")
      .Optional("with", "OPTIONS",
                "strategy options every candidate keeps, e.g. precision=bf16,recompute=selective")
      .Optional("json", "FILE", "also write the ranking (every candidate) as JSON")
      .Switch("exhaustive",
              "simulate every candidate that fits, also those whose kernels alone are slower than "
              "the top's")

      .Epilog(
          "example:\n  twinflow tune --model gpt --layers 4 --hidden 1024 --heads 16 "
          "--sequence 512 --batch 64 --cluster dgx-h100 --nodes 2 --with precision=bf16\n"
          "  mpirun -np 2 twinflow tune --model gpt --preset gpt3-175b --cluster dgx-h100 "
          "--nodes 128 --max-micro-batches 64\n");
  return parser;
}

// What every candidate's evaluation shares: the command line it extends and the cluster.
struct TuneSetting {
  const ArgParser& parser;
  const std::vector<std::string>& args;
  const sim::Topology& topology;
  const graph::OpRegistry& registry;
  const sbp::AlphaBetaConfig& cost;
  std::string fixed;        // --with
  int64_t top = 20;         // rows ranked: a candidate that cannot join them is not simulated
  bool exhaustive = false;  // --exhaustive: simulate every candidate that fits
  // The candidates' floors and bounds by what they depend on, and the searches schedules
  // share (tune_screen.h). Both live as long as the tune.
  Screens* screens = nullptr;
  SearchCache* searches = nullptr;
};

// "out of memory (...)" for a candidate whose floor passes the device's memory.
bool DropByFloor(int64_t floor, int64_t memory, Outcome& o) {
  if (floor <= memory) return false;
  o.peak_bytes = floor;
  o.why = "out of memory (at least " + FormatBytes(floor) +
          " of variables and kept activations, not compiled)";
  return true;
}

// The candidate's command line: the tune flags with its --strategy and the cluster's --devices.
ParsedArgs CandidateArgs(const TuneSetting& setting, const Candidate& candidate) {
  std::vector<std::string> with = setting.args;
  for (const std::string& flag :
       {std::string("--strategy"), candidate.Text(setting.fixed), std::string("--devices"),
        std::to_string(setting.topology.devices())}) {
    with.push_back(flag);
  }
  return setting.parser.Parse(with);
}

// The screen of a candidate, its model left in `model` when it was built for it.
const Screen& ScreenOf(const TuneSetting& setting, const Candidate& candidate,
                       std::optional<models::BuiltModel>& model) {
  return setting.screens->Of(
      candidate,
      [&] { return BuildModelFromArgs(CandidateArgs(setting, candidate), setting.registry); },
      model);
}

// Compiles and simulates one candidate, unless its screen shows it cannot fit or cannot step
// faster than `to_beat`. A failure drops it, with why.
Outcome Evaluate(const TuneSetting& setting, const Candidate& candidate, int64_t index,
                 double to_beat) {
  const sim::Topology& cluster = setting.topology;
  Outcome o;
  o.index = index;
  o.candidate = candidate;
  try {
    std::optional<models::BuiltModel> model;
    const Screen& screen = ScreenOf(setting, candidate, model);
    if (!screen.error.empty()) {
      o.why = screen.error;
      return o;
    }
    // The floor may not fit: then no Plan of this strategy does, and compiling and simulating
    // it (seconds to minutes at cluster scale) would only say so.
    const int64_t memory = cluster.spec().device().memory_bytes();
    if (DropByFloor(FloorBytes(screen, candidate), memory, o)) return o;
    if (const double bound = BoundSeconds(screen, candidate); bound > to_beat) {
      o.why = NotSimulatedWhy(bound, to_beat, setting.top);
      return o;
    }
    const ParsedArgs one = CandidateArgs(setting, candidate);
    SearchCache::Entry& entry = setting.searches->For(candidate);
    if (!entry.model) {
      entry.model.emplace(model ? std::move(*model) : BuildModelFromArgs(one, setting.registry));
    }
    const models::BuiltModel& built = *entry.model;
    entry.model->strategy.schedule = candidate.schedule;  // what the lowering reads of it
    const compiler::Compiled compiled =
        CompileFromArgs(built, one, setting.registry, 0, &setting.cost,
                        SimulatorFold(one, built.strategy, cluster.spec()),
                        entry.assignment ? &*entry.assignment : nullptr, setting.searches->times(),
                        /*stamp_hash=*/false);
    if (!entry.assignment) entry.assignment = compiled.assignment;
    o.parallelism = compiler::ParallelismTable(
        compiler::ParallelismByFamily(built.graph, setting.registry, compiled.assignment));
    const sim::SimResult r = sim::Simulate(compiled.plan, cluster, sim::SimOptions{});
    for (const sim::DeviceReport& d : r.devices)
      o.peak_bytes = std::max(o.peak_bytes, d.arena_bytes);
    o.step_s = r.step_s;
    o.mfu = r.mfu;
    o.samples_per_s = static_cast<double>(SamplesPerStep(built)) / std::max(r.step_s, 1e-12);
    if (!r.finished) {
      o.why = "deadlocks";
    } else if (o.peak_bytes > cluster.spec().device().memory_bytes()) {
      o.why = "out of memory (" + FormatBytes(o.peak_bytes) + ")";
    } else {
      o.ok = true;
    }
  } catch (const Error& e) {
    o.why = DroppedWhy(e);
  }
  return o;
}

// One candidate's outcome; one out of memory is tried again with zero=1 (with dp), then also
// with recompute=full, each trading a little time for memory, and keeps the first that fits.
Outcome EvaluateOrSave(const TuneSetting& setting, const Candidate& candidate, int64_t index,
                       double to_beat) {
  Outcome o = Evaluate(setting, candidate, index, to_beat);
  Candidate again = candidate;
  for (int step = 0; step < 2 && o.why.starts_with("out of memory"); ++step) {
    // Neither where --with already chose it; zero=1 only with data parallelism.
    const bool chosen = setting.fixed.find(step == 0 ? "zero=" : "recompute=") != std::string::npos;
    if (chosen || (step == 0 && candidate.dp == 1)) continue;
    (step == 0 ? again.zero : again.recompute) = true;
    const Outcome saved = Evaluate(setting, again, index, to_beat);
    const std::string what = step == 0 ? "zero=1" : "recompute=full";
    if (saved.ok) {
      o = saved;
    } else if (saved.why.starts_with("out of memory")) {
      o.why += ", " + FormatBytes(saved.peak_bytes) + " with " + what;
    } else if (saved.why.starts_with("not simulated")) {
      o.why += "; with " + what + " " + saved.why;
    }
  }
  return o;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Set by Ctrl-C: stop after the candidate in progress. A second Ctrl-C ends the process.
volatile std::sig_atomic_t interrupted = 0;
extern "C" void OnInterrupt(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

// The candidates in the order tune evaluates them: the fastest bound first (then candidate
// order), so the strategies that will rank come early and raise the bar for the rest.
// With `stoppable` Ctrl-C cuts the screen short (one rank); ranks screen every candidate, so
// that they share out one order, and stop together after the first batch.
std::vector<int64_t> BoundOrder(const TuneSetting& setting,
                                const std::vector<Candidate>& candidates, bool stoppable) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<double, int64_t>> keyed;
  for (size_t i = 0; i < candidates.size() && !(stoppable && interrupted); ++i) {
    std::optional<models::BuiltModel> unused;
    keyed.push_back({BoundSeconds(ScreenOf(setting, candidates[i], unused), candidates[i]),
                     static_cast<int64_t>(i)});
  }
  std::sort(keyed.begin(), keyed.end());
  std::cerr << "[screened " << keyed.size() << " candidates by their models in "
            << FormatSeconds(SecondsSince(start)) << "]\n";
  std::vector<int64_t> order;
  for (const auto& entry : keyed) order.push_back(entry.second);
  return order;
}

// Every rank's outcomes of one batch, on every rank (one rank: its own).
std::vector<Outcome> Gathered(const std::vector<Outcome>& mine,
                              const std::vector<Candidate>& candidates, TuneGroup& group) {
  if (group.size() == 1) return mine;
  std::vector<Outcome> all;
  for (const std::string& text : group.Allgather(EncodeOutcomes(mine))) {
    for (Outcome& o : DecodeOutcomes(text, candidates)) all.push_back(std::move(o));
  }
  return all;
}

// Whether any member was interrupted (one process: this one).
bool AnyInterrupted(TuneGroup& group) {
  if (group.size() == 1) return interrupted;
  for (const std::string& flag : group.Allgather(interrupted ? "1" : "0")) {
    if (flag == "1") return true;
  }
  return false;
}

// Candidates are evaluated in batches of this many, in `order`; each batch's bar is the top's
// slowest step among the batches before it. A fixed size, not the rank count, so that any
// number of members decides alike and gathers the ranking one process would; up to this many
// members share a batch.
constexpr size_t kBatch = 8;

// The outcomes of every candidate (every member's), this member taking every size()-th of
// each batch, with a progress line each on stderr, until Ctrl-C.
std::vector<Outcome> EvaluateInBatches(const TuneSetting& setting,
                                       const std::vector<Candidate>& candidates,
                                       const std::vector<int64_t>& order, TuneGroup& group,
                                       std::chrono::steady_clock::time_point start) {
  const int rank = group.member(), ranks = group.size();
  std::vector<Outcome> done;
  size_t share = 0, mine = 0;
  for (size_t p = rank; p < order.size(); p += ranks) ++share;
  for (size_t first = 0; first < order.size(); first += kBatch) {
    const double to_beat = setting.exhaustive ? std::numeric_limits<double>::infinity()
                                              : StepToBeat(done, setting.top);
    std::vector<Outcome> batch;
    for (size_t p = first; p < std::min(first + kBatch, order.size()) && !interrupted; ++p) {
      // Round robin: contiguous runs would keep a strategy's schedules (one SBP search) on one
      // member, but balance worse; measured 10% slower at 1,024 GPUs.
      if (static_cast<int>(p % ranks) != rank) continue;
      batch.push_back(EvaluateOrSave(setting, candidates[order[p]], order[p], to_beat));
      const Outcome& o = batch.back();
      const double wall = SecondsSince(start);
      ++mine;
      const double left = wall / static_cast<double>(mine) * static_cast<double>(share - mine);
      std::cerr << "["
                << (ranks > 1 ? group.member_noun() + (" " + std::to_string(rank)) + ": " : "")
                << mine << "/" << share << ", " << FormatSeconds(wall) << ", about "
                << FormatSeconds(left) << " left] " << o.candidate.Text(setting.fixed) << ": "
                << (o.ok ? "step " + FormatSeconds(o.step_s) : o.why) << "\n";
    }
    for (Outcome& o : Gathered(batch, candidates, group)) done.push_back(std::move(o));
    if (AnyInterrupted(group)) break;
  }
  return done;
}

// The ranked table of the strategies that fit (`ranked` is ranked), the parallelism of the
// best, and why each other one dropped.
void PrintRanking(std::ostream& out, const std::vector<Outcome>& ranked, int64_t top,
                  const std::string& fixed) {
  TextTable table({"rank", "strategy", "step time", "samples/s", "MFU", "peak memory"});
  int64_t rank = 0;
  for (const Outcome& o : ranked) {
    if (!o.ok || rank >= top) continue;
    ++rank;
    table.Add({std::to_string(rank), o.candidate.Text(fixed), FormatSeconds(o.step_s),
               FormatFixed(o.samples_per_s, 1), FormatFixed(100 * o.mfu, 1) + "%",
               FormatBytes(o.peak_bytes)});
  }
  table.Print(out);
  if (!ranked.empty() && ranked[0].ok) {
    out << "parallelism of the forward ops of " << ranked[0].candidate.Text(fixed)
        << ", by mesh axis (0: dp, 1: tp):\n"
        << ranked[0].parallelism;
  }
  for (const Outcome& o : ranked) {
    if (!o.ok) out << "dropped " << o.candidate.Text(fixed) << ": " << o.why << "\n";
  }
}

// What was tuned, how many candidates fit, how fast they went, and whether Ctrl-C cut it short.
void PrintTuneSummary(std::ostream& out, const ParsedArgs& parsed, const sim::Topology& topology,
                      const std::vector<Outcome>& outcomes, size_t candidates, double seconds,
                      const TuneGroup& group) {
  const sim::ClusterSpec& spec = topology.spec();
  int64_t feasible = 0, skipped = 0;
  for (const Outcome& o : outcomes) {
    feasible += o.ok;
    skipped += o.why.find("not simulated") != std::string::npos;
  }
  out << "tuned " << parsed.Get("model") << " on " << spec.name() << " x " << spec.nodes()
      << " nodes (" << topology.devices() << " devices): " << feasible << " of " << outcomes.size()
      << " strategies fit"
      << (skipped > 0 ? " (" + std::to_string(skipped) +
                            " not simulated: slower than the top by "
                            "their kernels alone)"
                      : "")
      << ", " << FormatSeconds(seconds) << " ("
      << FormatFixed(60.0 * static_cast<double>(outcomes.size()) / std::max(seconds, 1e-9), 1)
      << " configurations per minute"
      << (group.size() > 1 ? " over " + std::to_string(group.size()) + " " + group.noun() : "")
      << "); optimizer " << OptimizerLabelFromArgs(parsed) << "\n";
  if (outcomes.size() < candidates) {
    out << "interrupted: " << outcomes.size() << " of " << candidates
        << " candidates simulated; the ranking of those follows\n";
  }
  if (parsed.Given("replica")) {
    out << "each strategy folded to one data-parallel replica (--replica: approximate where the "
           "replicas do not sit alike on the nodes)\n";
  }
}

// Under mpirun: every rank runs `twinflow tune` with the same arguments (they share out one
// list of candidates), or the job ends naming the rank that differs or does not answer.
void AgreeOnArguments(const std::vector<std::string>& args, const comm::MpiSession& mpi) {
  std::string mine;
  for (const std::string& a : args) mine += a + '\x1f';
  try {
    const std::vector<std::string> all =
        AgreeOnStartup("tune", mine, mpi.rank(), comm::MpiSession::kStartSeconds);
    for (size_t r = 1; r < all.size(); ++r) {
      if (all[r] != all[0]) {
        throw InvalidArgumentError("rank " + std::to_string(r) +
                                   " runs tune with other arguments than rank 0");
      }
    }
  } catch (const Error& e) {
    std::cerr << "twinflow tune: error: " << e.message() << std::endl;
    mpi.Abort(ExitCodeFor(e.kind()));
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
    throw InvalidArgumentError(
        "--strategy: tune chooses the strategies itself (--with adds options)");
  }
  const std::string fixed = parsed.Given("with") ? parsed.Get("with") : "";
  const sim::Topology topology(ClusterFromArgs(parsed));
  const int64_t devices = topology.devices();
  const std::vector<Candidate> candidates = models::EnumerateCandidates(
      devices, topology.spec().devices_per_node(), parsed.GetInt("max-micro-batches", 1, 1024));
  const graph::OpRegistry registry = ops::BuiltinOps();
  const sbp::AlphaBetaConfig cost = sim::SearchCostConfig(topology.spec());
  std::unique_ptr<comm::MpiSession> mpi;
  if (comm::MpiSession::LaunchedByMpirun())
    mpi = std::make_unique<comm::MpiSession>("twinflow tune");
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;
  if (mpi) AgreeOnArguments(args, *mpi);
  if (mpi && parsed.Given("jobs")) {
    throw InvalidArgumentError("--jobs: under mpirun the ranks share the candidates");
  }
  const int jobs = parsed.Given("jobs")
                       ? static_cast<int>(parsed.GetInt("jobs", 1, static_cast<int64_t>(kBatch)))
                       : DefaultJobs(static_cast<int>(kBatch));
  const auto start = std::chrono::steady_clock::now();
  Screens screens(registry, topology.spec());
  SearchCache searches;
  const int64_t top = parsed.GetInt("top", 1, 1 << 20);
  const TuneSetting setting{parser,   args,     topology, registry,
                            cost,     fixed,    top,      parsed.Given("exhaustive"),
                            &screens, &searches};
  std::signal(SIGINT, OnInterrupt);
  const std::vector<int64_t> order = BoundOrder(setting, candidates, ranks == 1);
  out.flush();  // a forked job would print it again
  const std::unique_ptr<TuneGroup> group = mpi ? MpiTune(rank, ranks) : ForkTune(jobs);
  std::vector<Outcome> outcomes = EvaluateInBatches(setting, candidates, order, *group, start);
  std::signal(SIGINT, SIG_DFL);
  if (!mpi && group->member() != 0) EndForkedChild();
  RankOutcomes(outcomes);
  if (rank != 0) return 0;
  PrintTuneSummary(out, parsed, topology, outcomes, candidates.size(), SecondsSince(start), *group);
  PrintRanking(out, outcomes, top, fixed);
  if (parsed.Given("json")) WriteFileAtomically(parsed.Get("json"), OutcomesJson(outcomes, fixed));
  for (const Outcome& o : outcomes) {
    if (o.ok) return 0;
  }
  return 1;
}

}  // namespace twinflow::launcher
