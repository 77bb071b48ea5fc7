#include "launcher/tune_command.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "engine/comm/mpi_session.h"
#include "engine/compiler/parallelism.h"
#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "launcher/cluster_args.h"
#include "launcher/cluster_plan.h"
#include "launcher/model_args.h"
#include "launcher/mpi_tune_group.h"
#include "launcher/startup_agreement.h"
#include "planner/setup_warning.h"
#include "planner/tune_candidates.h"
#include "planner/tuner.h"
#include "simulator/hardware/search_cost.h"

namespace twinflow::launcher {
namespace {

// The flags of `twinflow tune`, declared once for parsing, the usage text and for re-parsing
// each candidate's own flags.
ArgParser TuneParser() {
  ArgParser parser(
      "twinflow tune",
      "Enumerate the strategies that fit a cluster (dp, tp, pp; every micro-batch count the "
      "batch allows; schedules and chunks; sp; zero=1; recomputation), simulate each that could "
      "still rank, and rank those that fit. Each is screened by its model first: one whose "
      "memory floor passes the device's is not compiled, and one whose step-time bound is "
      "slower than the top is not simulated (--exhaustive simulates all). "
      "Under mpirun the ranks share the candidates and rank 0 prints the ranking one rank "
      "would. Ctrl-C stops after the candidate in progress and ranks those done.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  AddFoldFlag(parser);
  parser
      .Optional("max-micro-batches", "N",
                "the most micro-batches per step to try (default: every count that divides a "
                "replica's share of the batch)")
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
      .Switch("no-proxies",
              "compile and simulate every candidate on its whole model (by default a gpt or "
              "llama candidate with more than two layers per pipeline chunk is estimated from "
              "four smaller models of its strategy, and the top is re-simulated whole)")

      .Epilog(
          "example:\n  twinflow tune --model gpt --layers 4 --hidden 1024 --heads 16 "
          "--sequence 512 --batch 64 --cluster dgx-h100 --nodes 2 --with precision=bf16\n"
          "  mpirun -np 2 twinflow tune --model gpt --preset gpt3-175b --cluster dgx-h100 "
          "--nodes 128 --max-micro-batches 64\n");
  return parser;
}

using planner::Outcome;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The candidate's command line: the tune flags with its --strategy and the cluster's --devices.
ParsedArgs CandidateArgs(const ArgParser& parser, const std::vector<std::string>& args,
                         const parallel::Strategy& candidate, int64_t devices) {
  std::vector<std::string> with = args;
  for (const std::string& flag : {std::string("--strategy"), candidate.Compact(),
                                  std::string("--devices"), std::to_string(devices)}) {
    with.push_back(flag);
  }
  return parser.Parse(with);
}

// Set by Ctrl-C: stop after the candidate in progress. A second Ctrl-C ends the process.
volatile std::sig_atomic_t interrupted = 0;
extern "C" void OnInterrupt(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

// The ranked table of the strategies that fit (`ranked` is ranked), the parallelism of the
// best, and why each other one dropped.
void PrintRanking(std::ostream& out, const std::vector<Outcome>& ranked, int64_t top) {
  TextTable table({"rank", "strategy", "step time", "samples/s", "tokens/s/device",
                   "TFLOP/s/device", "MFU", "peak memory"});
  int64_t rank = 0;
  for (const Outcome& o : ranked) {
    if (!o.ok() || rank >= top) continue;
    ++rank;
    table.Add({std::to_string(rank), o.candidate.Compact(), FormatSeconds(o.step_s),
               FormatFixed(o.samples_per_s, 1), FormatFixed(o.tokens_per_device_s, 0),
               FormatFixed(o.model_flops_per_device_s / 1e12, 1), FormatFixed(100 * o.mfu, 1) + "%",
               FormatBytes(o.peak_bytes)});
  }
  table.Print(out);
  if (!ranked.empty() && ranked[0].ok()) {
    out << "parallelism of the forward ops of " << ranked[0].candidate.Compact()
        << ", by mesh axis (0: dp, 1: tp):\n"
        << ranked[0].parallelism;
  }
  for (const Outcome& o : ranked) {
    if (!o.ok()) out << "dropped " << o.candidate.Compact() << ": " << o.why << "\n";
  }
}

// What was tuned, how many candidates fit, how fast they went, and whether Ctrl-C cut it short.
void PrintTuneSummary(std::ostream& out, const ParsedArgs& parsed, const sim::Topology& topology,
                      const std::vector<Outcome>& outcomes, size_t candidates, double seconds,
                      const planner::TuneGroup& group) {
  const sim::ClusterSpec& spec = topology.spec();
  int64_t feasible = 0, skipped = 0;
  for (const Outcome& o : outcomes) {
    feasible += o.ok();
    skipped += o.verdict == planner::Verdict::kNotSimulated;
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

// What the tune varies and keeps, from its flags: the model's batch and layers, --with,
// --micro-batch-size fixed, --max-micro-batches, and the defaults of an LLM on GPUs (printed;
// `tuned` gains the --attention flag each candidate is then built with; `fused`: whether the
// candidates' attention is fused).
planner::CandidateSpace SpaceFromArgs(const ParsedArgs& parsed, const sim::ClusterSpec& spec,
                                      std::vector<std::string>& tuned, bool& fused) {
  planner::CandidateSpace space;
  space.devices = spec.nodes() * spec.devices_per_node();
  space.per_node = spec.devices_per_node();
  space.base = FromFlag("with", [&] {
    return planner::ParseTuneOptions(parsed.Given("with") ? parsed.Get("with") : "");
  });
  planner::TunedModel model = TunedModelFromArgs(parsed);
  const bool was_fused = model.fused_attention;
  for (const std::string& line :
       planner::FitSpaceToModel(space, model, spec.device().kind() == sim::DEVICE_KIND_GPU)) {
    std::cerr << line << "\n";
  }
  fused = model.fused_attention;
  if (fused && !was_fused) tuned.insert(tuned.end(), {"--attention", "fused"});
  if (parsed.Given("micro-batch-size")) {
    space.micro_batch_size = parsed.GetInt("micro-batch-size", 1, 1 << 30);
  }
  if (parsed.Given("max-micro-batches")) {
    space.max_mb = parsed.GetInt("max-micro-batches", 1, 1 << 30);
  }
  return space;
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
  const sim::Topology topology(ClusterFromArgs(parsed));
  std::vector<std::string> tuned = args;  // each candidate's flags, with the tune's defaults
  bool fused = false;
  const planner::CandidateSpace space = SpaceFromArgs(parsed, topology.spec(), tuned, fused);
  const int64_t devices = topology.devices();
  const std::vector<parallel::Strategy> candidates = planner::EnumerateCandidates(space);
  const graph::OpRegistry registry = ops::BuiltinOps();
  const std::string warning = planner::SetupWarning(parsed.Get("model") != "mlp",
                                                    space.base.precision, fused, topology.spec());
  if (!warning.empty()) std::cerr << warning << " (--with precision=bf16)\n";
  std::unique_ptr<comm::MpiSession> mpi;
  if (comm::MpiSession::LaunchedByMpirun())
    mpi = std::make_unique<comm::MpiSession>("twinflow tune");
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;
  if (mpi) AgreeOnArguments(args, *mpi);
  if (mpi && parsed.Given("jobs")) {
    throw InvalidArgumentError("--jobs: under mpirun the ranks share the candidates");
  }
  const int jobs = parsed.Given("jobs") ? static_cast<int>(parsed.GetInt("jobs", 1, 8))
                                        : planner::DefaultJobs(8);
  const auto start = std::chrono::steady_clock::now();
  planner::TuneOptions options;
  options.cost = parsed.Given("cost-model") ? CostConfigFromArgs(parsed, "accelerator")
                                            : sim::SearchCostConfig(topology.spec());
  options.top = parsed.GetInt("top", 1, 1 << 20);
  options.exhaustive = parsed.Given("exhaustive");
  options.fold = FoldModeFromArgs(parsed);
  const planner::ModelBuilder build = [&](const parallel::Strategy& candidate) {
    return BuildModelFromArgs(CandidateArgs(parser, tuned, candidate, devices), registry);
  };
  const planner::TunedModel extent = TunedModelFromArgs(parsed);
  if (extent.decoder && !parsed.Given("no-proxies")) {
    options.proxy = [&](const parallel::Strategy& proxy, const planner::ModelExtent& at) {
      return BuildModelFromArgs(CandidateArgs(parser, tuned, proxy, devices), registry, at);
    };
    options.layers = extent.layers;
    options.batch = extent.batch;
  }
  planner::Tuner tuner(build, registry, topology, options);
  std::signal(SIGINT, OnInterrupt);
  planner::TuneHooks hooks;
  hooks.stop = [] { return interrupted != 0; };
  hooks.progress = [](const planner::TuneProgress& p) {
    std::cerr << planner::ProgressLine(p) << std::flush;
  };
  hooks.screened = [&out](size_t screened, double seconds) {
    std::cerr << "[screened " << screened << " candidates by their models in "
              << FormatSeconds(seconds) << "]\n";
    out.flush();  // a forked job would print it again
  };
  // The screen runs before the fork, so that every job starts with its screens and order.
  const std::vector<int64_t> order = tuner.Order(candidates, hooks, ranks == 1);
  const std::unique_ptr<planner::TuneGroup> group =
      mpi ? MpiTune(rank, ranks) : planner::ForkTune(jobs);
  const std::vector<Outcome> outcomes = tuner.Run(candidates, order, *group, hooks);
  std::signal(SIGINT, SIG_DFL);
  if (!mpi && group->member() != 0) planner::EndForkedChild();
  if (rank != 0) return 0;
  PrintTuneSummary(out, parsed, topology, outcomes, candidates.size(), SecondsSince(start), *group);
  PrintRanking(out, outcomes, options.top);
  if (parsed.Given("json"))
    WriteFileAtomically(parsed.Get("json"), planner::OutcomesJson(outcomes));
  for (const Outcome& o : outcomes) {
    if (o.ok()) return 0;
  }
  return 1;
}

}  // namespace twinflow::launcher
