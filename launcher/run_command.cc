#include "launcher/run_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <tuple>

#include "engine/comm/launch_environment.h"
#include "engine/comm/mpi_session.h"
#include "engine/comm/mpi_transport.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/chrome_trace.h"
#include "engine/plan/plan_io.h"
#include "engine/runtime/checkpoint.h"
#include "engine/runtime/feed_spec.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/cpu/cpu_kernels.h"
#include "launcher/model_args.h"

namespace twinflow::launcher {
namespace {

// A step's loss: the sum of its micro-batches' shares (one value without micro-batches).
double StepLoss(const Tensor& fetched) {
  double sum = 0;
  for (int64_t i = 0; i < fetched.numel(); ++i) sum += fetched.GetDouble(i);
  return sum;
}

// What one rank is about to run, as text every rank compares: "ok <plan hash> <run args>" or
// "error <exit code> <message>".
std::string JobText(const plan::Plan& plan, int64_t steps, uint64_t data_seed, int64_t first,
                    runtime::FeedMode feed) {
  return "ok " + plan::ContentHash(plan) + " steps=" + std::to_string(steps) +
         " data-seed=" + std::to_string(data_seed) + " first-step=" + std::to_string(first) +
         " feed=" + runtime::FeedModeName(feed);
}

// The synthetic batch of `step` as this rank feeds it: the whole batch (feed=global), or its
// rows this rank's devices hold (feed=local, `specs` from FeedSpecs), so that both modes, on any
// number of ranks, train on the same global batch.
std::map<std::string, Tensor> RankBatch(const models::BuiltModel& model, int64_t step,
                                        uint64_t seed,
                                        const std::vector<runtime::FeedSpec>& specs) {
  std::map<std::string, Tensor> batch = models::SyntheticBatch(model, step, seed);
  for (const runtime::FeedSpec& spec : specs) {
    const auto it = batch.find(spec.name);
    if (it != batch.end()) it->second = runtime::LocalRows(it->second, spec);
  }
  return batch;
}

// Every rank learns every rank's job text; a failure or a different job anywhere stops all of
// them with the same report, so no rank is left waiting for another.
void AgreeOnJob(const std::string& mine, int rank) {
  const std::vector<std::string> jobs = comm::AllgatherText(mine);
  for (size_t r = 0; r < jobs.size(); ++r) {
    if (jobs[r].rfind("error ", 0) != 0) continue;
    const std::string rest = jobs[r].substr(6);  // "<exit code> <message>"
    const size_t space = rest.find(' ');
    const std::string message = "rank " + std::to_string(r) + " failed to start: " +
                                (space == std::string::npos ? rest : rest.substr(space + 1));
    // The same exit status on every rank as on the one that failed.
    if (rest.compare(0, space, "2") == 0) throw InvalidArgumentError(message);
    throw CommError(message);
  }
  for (size_t r = 1; r < jobs.size(); ++r) {
    if (jobs[r] == jobs[0]) continue;
    throw PlanError("rank " + std::to_string(rank) + " of " + std::to_string(jobs.size()) +
                    ": the ranks would run different jobs (Plan hash and run flags): rank 0 has " +
                    jobs[0].substr(3) + ", rank " + std::to_string(r) + " has " +
                    jobs[r].substr(3));
  }
}

// Every rank's spans (a collective call when there are ranks), in start order.
std::vector<plan::TraceSpan> GatherSpans(const std::vector<plan::TraceSpan>& mine,
                                         runtime::Transport* transport) {
  std::vector<plan::TraceSpan> all = mine;
  if (transport) {
    std::vector<std::byte> bytes(mine.size() * sizeof(plan::TraceSpan));
    std::memcpy(bytes.data(), mine.data(), bytes.size());
    all.clear();
    for (const std::vector<std::byte>& rank : transport->Allgather(bytes)) {
      const size_t n = rank.size() / sizeof(plan::TraceSpan);
      const size_t at = all.size();
      all.resize(at + n);
      std::memcpy(all.data() + at, rank.data(), n * sizeof(plan::TraceSpan));
    }
  }
  std::sort(all.begin(), all.end(), [](const plan::TraceSpan& a, const plan::TraceSpan& b) {
    return std::tie(a.start_ns, a.task) < std::tie(b.start_ns, b.task);
  });
  return all;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow run",
                   "Train a model on CPU devices with synthetic data: in-process, or across the "
                   "ranks of mpirun.");
  AddModelFlags(parser);
  parser.Optional("steps", "N", "training steps", "10")
      .Optional("data-seed", "N", "seed of the synthetic batches", "7")
      .Optional("watchdog", "SECONDS", "fail if no task finishes for this long", "60")
      .Optional("plan", "FILE",
                "run this Plan (from `twinflow compile` with the same model flags) "
                "instead of compiling")
      .Optional("devices-per-rank", "N",
                "under mpirun: devices each rank owns (default: devices / ranks)")
      .Optional("feed", "local|global",
                "under mpirun: each rank feeds the rows of the batch its devices hold (local, "
                "as DistributedSampler) or the whole batch (global)",
                "local")
      .Optional("losses-out", "FILE",
                "also write every step's loss to FILE, one per line, exactly "
                "(%.17g)")
      .Optional("trace", "FILE",
                "write every act's span as a Chrome trace (as `twinflow sim "
                "--trace` does), gathered from every rank")
      .Optional("save", "DIR", "after the run, save model and optimizer state to DIR")
      .Optional("load", "DIR",
                "start from the state saved in DIR (under any strategy), at its step")
      .Switch("check", "also run the single-device reference and compare every step's loss")
      .Epilog(
          "examples:\n  twinflow run --model mlp --devices 4 --strategy dp=2,tp=2 --steps 20 "
          "--check\n  mpirun -np 2 twinflow run --model mlp --devices 2 --strategy dp=2 "
          "--steps 20\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  std::unique_ptr<comm::MpiSession> mpi;
  if (comm::MpiSession::LaunchedByMpirun()) mpi = std::make_unique<comm::MpiSession>();
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;

  // Startup, on every rank: build, compile (or load), then agree on the job.
  const graph::OpRegistry registry = ops::BuiltinOps();
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  models::BuiltModel model;
  plan::Plan plan;
  int64_t steps = 0;
  uint64_t data_seed = 0;
  runtime::Checkpoint loaded;  // the state to start from, with --load
  runtime::FeedMode feed = runtime::FeedMode::kLocal;
  std::vector<runtime::FeedSpec> feed_specs;  // what this rank feeds
  std::string job;
  try {
    comm::CheckLaunchEnvironment(mpi.get());
    feed = runtime::ParseFeedMode(parsed.Get("feed"), "--feed");
    steps = parsed.GetInt("steps", 1, 1 << 20);
    data_seed = static_cast<uint64_t>(parsed.GetInt("data-seed", 0, 1LL << 40));
    // Under mpirun without --devices, an inferred degree takes ranks x devices per rank.
    const int64_t given_per_rank =
        parsed.Given("devices-per-rank") ? parsed.GetInt("devices-per-rank", 1, 1 << 20) : 1;
    model = BuildModelFromArgs(parsed, registry, false, ranks > 1 ? ranks * given_per_rank : 0);
    const int64_t devices = model.devices;
    int64_t per_rank = 0;  // one rank: every device in this process
    if (ranks > 1) {
      per_rank = parsed.Given("devices-per-rank") ? parsed.GetInt("devices-per-rank", 1, 1 << 20)
                                                  : devices / ranks;
      if (per_rank < 1 || (devices + per_rank - 1) / per_rank != ranks) {
        throw InvalidArgumentError("--devices-per-rank: " + std::to_string(devices) +
                                   " devices at " + std::to_string(per_rank) +
                                   " per rank do not make the " + std::to_string(ranks) +
                                   " ranks mpirun started");
      }
    }
    plan = !parsed.Given("plan") ? CompileFromArgs(model, parsed, registry, per_rank).plan
                                 : LoadPlanForModel(parsed.Get("plan"), model);
    if (plan.cluster().ranks() > ranks) {
      throw InvalidArgumentError("the Plan spans " + std::to_string(plan.cluster().ranks()) +
                                 " ranks; launch it with mpirun -np " +
                                 std::to_string(plan.cluster().ranks()));
    }
    if (parsed.Given("load")) {
      loaded = runtime::LoadCheckpoint(parsed.Get("load"));
      runtime::CheckCheckpointFits(plan, loaded);
    }
    feed_specs = runtime::FeedSpecs(plan, rank, feed);
    job = JobText(plan, steps, data_seed, loaded.steps, feed);
  } catch (const Error& e) {
    if (ranks == 1) throw;
    job = "error " + std::to_string(ExitCodeFor(e.kind())) + " " + e.message();
  }
  if (mpi) {
    try {
      AgreeOnJob(job, rank);
    } catch (const Error& e) {
      // Every rank prints its refusal before any exits: mpirun ends the others as soon as one
      // rank exits non-zero, which would cut their reports short.
      std::cerr << "twinflow run: error: " << e.message() << std::endl;
      comm::AllgatherBytes({});
      return ExitCodeFor(e.kind());
    }
  }

  try {
    std::unique_ptr<comm::MpiTransport> transport;
    if (mpi && ranks > 1) transport = std::make_unique<comm::MpiTransport>(plan, *mpi);
    // Steps are numbered on from the checkpoint's, so a resumed run sees the same batches as an
    // uninterrupted one.
    const int64_t first = loaded.steps;
    const runtime::FeedFn feeds = [&](int64_t step) {
      return RankBatch(model, first + step, data_seed, feed_specs);
    };
    runtime::ThreadedExecutor executor(plan, kernels, transport.get());
    if (parsed.Given("load")) runtime::RestoreCheckpoint(executor, plan, loaded);
    runtime::RunOptions run;
    run.steps = steps;
    run.watchdog_seconds = parsed.GetPositiveDouble("watchdog");
    run.trace = parsed.Given("trace");
    run.feed = feed;
    const runtime::RunResult result = executor.Run(feeds, run);
    if (run.trace) {
      std::vector<plan::TraceSpan> spans = GatherSpans(result.trace, transport.get());
      if (rank == 0) {
        WriteFileAtomically(parsed.Get("trace"),
                            plan::ChromeTraceJson(plan, spans, "twinflow run"));
      }
    }
    if (parsed.Given("save")) {
      // Every rank gathers (collectively); rank 0 writes.
      const runtime::Checkpoint state = runtime::CaptureCheckpoint(executor, plan, first + steps);
      if (rank == 0) runtime::SaveCheckpoint(parsed.Get("save"), state);
    }
    if (rank != 0) return 0;  // rank 0 reports for all
    const std::string loss = model.graph.tensor(model.loss).name;

    std::vector<double> reference;
    if (parsed.Given("check")) {
      // One device, the whole batch at once: the ground truth for any strategy.
      const models::BuiltModel whole =
          BuildModelFromArgs(parsed, registry, /*whole_batch=*/true, model.devices);
      interpreter::ReferenceInterpreter interp(whole.graph, kernels);
      for (const auto& [name, value] : loaded.tensors) interp.set_variable(name, value);
      for (int64_t s = 0; s < steps; ++s) {
        const auto batch = models::SyntheticBatch(model, first + s, data_seed);
        reference.push_back(interp.Step(batch, {whole.loss}).at(whole.loss).GetDouble(0));
      }
    }
    out << "model " << parsed.Get("model") << " on " << plan.devices_size() << " CPU devices";
    if (ranks > 1)
      out << " of " << ranks << " MPI ranks (" << mpi->local_size() << " on this node)";
    out << ", strategy " << model.strategy.ToString() << ", optimizer "
        << models::OptimizerLabel(model);
    if (parsed.Given("plan")) out << ", plan " << parsed.Get("plan");
    if (parsed.Given("load")) out << ", from " << runtime::CheckpointPath(parsed.Get("load"));
    out << "\n";
    double worst = 0;
    for (int64_t s = 0; s < steps; ++s) {
      const double value = StepLoss(result.fetches[s].at(loss));
      out << "step " << std::setw(4) << first + s << "  loss " << std::setprecision(8) << value;
      if (!reference.empty()) {
        const double diff =
            std::fabs(value - reference[s]) / std::max(1e-30, std::fabs(reference[s]));
        worst = std::max(worst, diff);
        out << "  reference " << reference[s] << "  rel. diff " << std::scientific
            << std::setprecision(2) << diff << std::defaultfloat;
      }
      out << "\n";
    }
    if (parsed.Given("losses-out")) {
      std::ofstream file(parsed.Get("losses-out"));
      for (int64_t s = 0; s < steps; ++s) {
        char text[64];
        std::snprintf(text, sizeof(text), "%.17g\n", StepLoss(result.fetches[s].at(loss)));
        file << text;
      }
      if (!file)
        throw InvalidArgumentError("--losses-out: cannot write " + parsed.Get("losses-out"));
    }
    if (parsed.Given("save")) {
      out << "saved " << runtime::CheckpointPath(parsed.Get("save")) << " at step " << first + steps
          << "\n";
    }
    out << "step time " << FormatSeconds(result.seconds / static_cast<double>(steps))
        << " (mean of " << steps << " steps, " << FormatSeconds(result.seconds) << " in all)\n";
    if (!reference.empty()) {
      out << "largest relative difference from the reference: " << std::scientific
          << std::setprecision(2) << worst << std::defaultfloat << "\n";
    }
    return 0;
  } catch (const Error& e) {
    if (ranks == 1) throw;
    // The other ranks may be waiting on this one: end them all, naming the culprit.
    std::cerr << "twinflow run: error: rank " << rank << ": " << e.message() << std::endl;
    mpi->Abort(ExitCodeFor(e.kind()));
  }
}

}  // namespace twinflow::launcher
