#include "launcher/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "engine/comm/launch_environment.h"
#include "engine/comm/mpi_session.h"
#include "engine/comm/mpi_transport.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_io.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/checkpoint.h"
#include "engine/runtime/feed_spec.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/builtin_kernels.h"
#include "launcher/model_args.h"
#include "launcher/startup_agreement.h"
#include "launcher/trace_args.h"
#include "launcher/transport_choice.h"

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
void AgreeOnJob(const std::string& mine, int rank, double seconds) {
  const std::vector<std::string> jobs = AgreeOnStartup("run", mine, rank, seconds);
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

// The flags of `twinflow run`, declared once for parsing and for the usage text.
ArgParser RunParser() {
  ArgParser parser("twinflow run",
                   "Train a model on CPU devices with synthetic data: in-process, or across the "
                   "ranks of mpirun.");
  AddModelFlags(parser);
  AddTraceFlags(parser);
  parser.Optional("steps", "N", "training steps", "10")
      .Optional("data-seed", "N", "seed of the synthetic batches", "7")
      .Optional("watchdog", "SECONDS", "fail if no task finishes for this long", "60")
      .Optional("startup-timeout", "SECONDS",
                "under mpirun: fail, naming them, when ranks have not all started MPI or "
                "reached the startup agreement within this long of each other",
                "10")
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
                "also write every step's loss to FILE as it is computed, one per line, "
                "exactly (%.17g)")
      .Optional("save", "DIR", "after the run, save model and optimizer state to DIR")
      .Optional("save-every", "N", "with --save, also save after every N steps")
      .Optional("keep", "K",
                "with --save, keep the K newest checkpoints (older ones as "
                "DIR/checkpoint-<step>.twck)",
                "1")
      .Optional("load", "DIR|FILE",
                "start from the state saved in DIR (or that checkpoint file, under any "
                "strategy), at its step")
      .Switch("check-finite",
              "stop at the first op whose output holds NaN or infinity, naming it (on with "
              "--check)")
      .Switch("check", "also run the single-device reference and compare every step's loss")
      .Switch("tf32",
              "with --device cuda: f32 matmuls may use TF32 tensor cores (faster, 10-bit "
              "mantissa products), as PyTorch's allow_tf32")
      .Epilog(
          "examples:\n  twinflow run --model mlp --devices 4 --strategy dp=2,tp=2 --steps 20 "
          "--check\n  mpirun -np 2 twinflow run --model mlp --devices 2 --strategy dp=2 "
          "--steps 20\n");
  return parser;
}

// What every rank runs, once built, compiled (or loaded) and checked at startup.
struct RunJob {
  models::BuiltModel model;
  plan::Plan plan;
  int64_t steps = 0;
  uint64_t data_seed = 0;
  runtime::Checkpoint loaded;  // the state to start from, with --load
  runtime::FeedMode feed = runtime::FeedMode::kLocal;
  std::vector<runtime::FeedSpec> feed_specs;  // what this rank feeds
  std::optional<TraceRequest> trace;          // with --trace
};

// The devices each rank owns under mpirun (0 on one rank: every device in this process);
// they must make exactly the ranks mpirun started.
int64_t DevicesPerRank(const ParsedArgs& parsed, int64_t devices, int ranks) {
  if (ranks <= 1) return 0;
  const int64_t per_rank = parsed.Given("devices-per-rank")
                               ? parsed.GetInt("devices-per-rank", 1, 1 << 20)
                               : devices / ranks;
  if (per_rank < 1 || (devices + per_rank - 1) / per_rank != ranks) {
    throw InvalidArgumentError("--devices-per-rank: " + std::to_string(devices) + " devices at " +
                               std::to_string(per_rank) + " per rank do not make the " +
                               std::to_string(ranks) + " ranks mpirun started");
  }
  return per_rank;
}

// One line on stderr in one write: under mpirun the ranks' lines and mpirun's own reach one
// terminal, and a line written in pieces can be cut by another.
void ReportError(const std::string& line) {
  const std::string text = line + "\n";
  std::cerr.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cerr.flush();
}

// Startup, on every rank: read the run flags, build the model, compile (or load) its Plan and
// the checkpoint to start from. Throws on anything this rank cannot run.
RunJob PrepareJob(const ParsedArgs& parsed, const graph::OpRegistry& registry,
                  const comm::MpiSession* mpi, int rank, int ranks) {
  RunJob job;
  comm::CheckLaunchEnvironment(mpi);
  job.feed = runtime::ParseFeedMode(parsed.Get("feed"), "--feed");
  job.trace = TraceRequestFromArgs(parsed, "twinflow run");
  job.steps = parsed.GetInt("steps", 1, 1 << 20);
  if ((parsed.Given("save-every") || parsed.Given("keep")) && !parsed.Given("save")) {
    throw InvalidArgumentError("--save-every and --keep need --save DIR");
  }
  if (parsed.Given("save-every")) parsed.GetInt("save-every", 1, 1 << 20);
  parsed.GetInt("keep", 1, 1 << 20);
  job.data_seed = static_cast<uint64_t>(parsed.GetInt("data-seed", 0, 1LL << 40));
  // Under mpirun without --devices, an inferred degree takes ranks x devices per rank.
  const int64_t given_per_rank =
      parsed.Given("devices-per-rank") ? parsed.GetInt("devices-per-rank", 1, 1 << 20) : 1;
  job.model = BuildModelFromArgs(parsed, registry, false, ranks > 1 ? ranks * given_per_rank : 0);
  const int64_t per_rank = DevicesPerRank(parsed, job.model.devices, ranks);
  job.plan = !parsed.Given("plan") ? CompileFromArgs(job.model, parsed, registry, per_rank).plan
                                   : LoadPlanForModel(parsed.Get("plan"), job.model);
  if (job.plan.cluster().ranks() > ranks) {
    throw InvalidArgumentError("the Plan spans " + std::to_string(job.plan.cluster().ranks()) +
                               " ranks; launch it with mpirun -np " +
                               std::to_string(job.plan.cluster().ranks()));
  }
  const auto on_cuda = [](const plan::Device& d) { return d.type() == plan::DEVICE_CUDA; };
  if (parsed.Given("tf32") &&
      std::none_of(job.plan.devices().begin(), job.plan.devices().end(), on_cuda)) {
    throw InvalidArgumentError("--tf32 is a mode of GPU matmuls: it needs --device cuda");
  }
  if (parsed.Given("load")) {
    job.loaded = runtime::LoadCheckpoint(parsed.Get("load"));
    runtime::CheckCheckpointFits(job.plan, job.loaded);
  }
  job.feed_specs = runtime::FeedSpecs(job.plan, rank, job.feed);
  return job;
}

// The loss of every step of `result`, as StepLoss sums it.
std::vector<double> StepLosses(const RunJob& job, const runtime::RunResult& result) {
  const std::string loss = job.model.graph.tensor(job.model.loss).name;
  std::vector<double> losses;
  for (const auto& fetched : result.fetches) losses.push_back(StepLoss(fetched.at(loss)));
  return losses;
}

// --losses-out on rank 0: each step's loss appended and flushed as soon as its Run ends, so a
// run killed after hours keeps what it computed. Lives for one TrainAndSave.
class LossStream {
 public:
  explicit LossStream(const std::string& path) : path_(path) {
    if (path_.empty()) return;
    file_.open(path_, std::ios::trunc);
    Check();
  }
  void Append(const std::vector<double>& losses) {
    if (path_.empty()) return;
    for (double value : losses) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.17g\n", value);
      file_ << text;
    }
    file_.flush();
    Check();
  }

 private:
  void Check() const {
    if (!file_) throw InvalidArgumentError("--losses-out: cannot write '" + path_ + "'");
  }
  std::string path_;
  std::ofstream file_;
};

// The steps of one Run: all of them, or fewer where something happens between steps (losses
// streamed to a file, a periodic save).
int64_t StepsPerRun(const ParsedArgs& parsed, int64_t steps) {
  if (parsed.Given("losses-out")) return 1;
  if (parsed.Given("save-every")) return parsed.GetInt("save-every", 1, 1 << 20);
  return steps;
}

// One Run's results after the earlier ones': fetches and trace appended, time added.
void Append(runtime::RunResult& total, runtime::RunResult part) {
  for (auto& f : part.fetches) total.fetches.push_back(std::move(f));
  total.trace.insert(total.trace.end(), part.trace.begin(), part.trace.end());
  total.seconds += part.seconds;
  total.peak_arena_bytes.resize(part.peak_arena_bytes.size(), 0);
  total.arena_high_water.resize(part.arena_high_water.size(), 0);
  for (size_t d = 0; d < part.peak_arena_bytes.size(); ++d) {
    total.peak_arena_bytes[d] = std::max(total.peak_arena_bytes[d], part.peak_arena_bytes[d]);
    total.arena_high_water[d] = std::max(total.arena_high_water[d], part.arena_high_water[d]);
  }
}

// Every rank gathers the state (collectively) at `step`; rank 0 writes it.
void SaveState(const ParsedArgs& parsed, const RunJob& job,
               const runtime::ThreadedExecutor& executor, int rank, int64_t step) {
  const runtime::Checkpoint state = runtime::CaptureCheckpoint(executor, job.plan, step);
  if (rank == 0) {
    runtime::SaveCheckpoint(parsed.Get("save"), state,
                            static_cast<int>(parsed.GetInt("keep", 1, 1 << 20)));
  }
}

// Runs the training steps on this rank, in Runs of StepsPerRun, streaming losses and saving
// as asked; then writes the gathered trace and the final checkpoint (collective under mpirun;
// rank 0 writes the files).
runtime::RunResult TrainAndSave(const ParsedArgs& parsed, const RunJob& job,
                                runtime::ThreadedExecutor& executor, runtime::Transport* transport,
                                int rank) {
  // Steps are numbered on from the checkpoint's, so a resumed run sees the same batches as an
  // uninterrupted one.
  const int64_t first = job.loaded.steps;
  if (parsed.Given("load")) runtime::RestoreCheckpoint(executor, job.plan, job.loaded);
  LossStream losses(rank == 0 && parsed.Given("losses-out") ? parsed.Get("losses-out") : "");
  runtime::RunOptions run;
  run.watchdog_seconds = parsed.GetPositiveDouble("watchdog");
  run.trace = job.trace.has_value();
  run.feed = job.feed;
  run.check_finite = parsed.Given("check-finite") || parsed.Given("check");
  const int64_t per_run = StepsPerRun(parsed, job.steps);
  const int64_t save_every =
      parsed.Given("save-every") ? parsed.GetInt("save-every", 1, 1 << 20) : 0;
  runtime::RunResult result;
  for (int64_t done = 0; done < job.steps;) {
    run.steps = std::min(per_run, job.steps - done);
    const runtime::FeedFn feeds = [&, done](int64_t step) {
      return RankBatch(job.model, first + done + step, job.data_seed, job.feed_specs);
    };
    runtime::RunResult part = executor.Run(feeds, run);
    done += run.steps;
    if (rank == 0) losses.Append(StepLosses(job, part));
    Append(result, std::move(part));
    if (save_every > 0 && done % save_every == 0 && done < job.steps) {
      SaveState(parsed, job, executor, rank, first + done);
    }
  }
  if (run.trace) {
    plan::TraceRecord record;
    record.spans = GatherSpans(result.trace, transport);
    if (rank == 0) WriteTrace(*job.trace, job.plan, record);
  }
  if (parsed.Given("save")) SaveState(parsed, job, executor, rank, first + job.steps);
  return result;
}

// With --check, every step's loss on one device, the whole batch at once: the ground truth for
// any strategy. Empty without --check.
std::vector<double> ReferenceLosses(const ParsedArgs& parsed, const graph::OpRegistry& registry,
                                    const kernels::KernelRegistry& kernels, const RunJob& job) {
  std::vector<double> reference;
  if (!parsed.Given("check")) return reference;
  const models::BuiltModel whole =
      BuildModelFromArgs(parsed, registry, /*whole_batch=*/true, job.model.devices);
  interpreter::ReferenceInterpreter interp(whole.graph, kernels);
  for (const auto& [name, value] : job.loaded.tensors) interp.set_variable(name, value);
  for (int64_t s = 0; s < job.steps; ++s) {
    const auto batch = models::SyntheticBatch(job.model, job.loaded.steps + s, job.data_seed);
    reference.push_back(interp.Step(batch, {whole.loss}).at(whole.loss).GetDouble(0));
  }
  return reference;
}

// The report's first line: what ran, where, and from what.
void PrintRunHeader(std::ostream& out, const ParsedArgs& parsed, const RunJob& job,
                    const comm::MpiSession* mpi, int ranks) {
  out << "model " << parsed.Get("model") << " on " << job.plan.devices_size() << " CPU devices";
  if (ranks > 1) out << " of " << ranks << " MPI ranks (" << mpi->local_size() << " on this node)";
  out << ", strategy " << job.model.strategy.ToString() << ", optimizer "
      << models::OptimizerLabel(job.model);
  if (parsed.Given("plan")) out << ", plan " << parsed.Get("plan");
  if (parsed.Given("load")) out << ", from " << runtime::CheckpointPath(parsed.Get("load"));
  out << "\n";
}

// One line a step: its loss, and with a reference, that and their relative difference.
// Returns the largest relative difference (0 without a reference).
double PrintStepLosses(std::ostream& out, const RunJob& job, const runtime::RunResult& result,
                       const std::vector<double>& reference) {
  const std::string loss = job.model.graph.tensor(job.model.loss).name;
  double worst = 0;
  for (int64_t s = 0; s < job.steps; ++s) {
    const double value = StepLoss(result.fetches[s].at(loss));
    out << "step " << std::setw(4) << job.loaded.steps + s << "  loss " << std::setprecision(8)
        << value;
    if (!reference.empty()) {
      const double diff =
          std::fabs(value - reference[s]) / std::max(1e-30, std::fabs(reference[s]));
      worst = std::max(worst, diff);
      out << "  reference " << reference[s] << "  rel. diff " << std::scientific
          << std::setprecision(2) << diff << std::defaultfloat;
    }
    out << "\n";
  }
  return worst;
}

// --check's tolerance on each step's relative loss difference: fp32 runs differ from the
// reference only by the order of partial sums; bf16 and fp16 ones also by where each device
// rounds its part to 16 bits (docs/models.md#mixed-precision: 2e-3 after 20 Adam steps).
double CheckTolerance(const parallel::Strategy& strategy) {
  return strategy.precision == DType::kF32 ? 1e-4 : 5e-3;
}

// Rank 0's report for all ranks: the header, the step losses, what was saved and the timing.
// Returns false when --check found a step beyond the tolerance.
bool ReportRun(std::ostream& out, const ParsedArgs& parsed, const RunJob& job,
               const runtime::RunResult& result, const std::vector<double>& reference,
               const comm::MpiSession* mpi, int ranks) {
  PrintRunHeader(out, parsed, job, mpi, ranks);
  const double worst = PrintStepLosses(out, job, result, reference);
  if (parsed.Given("save")) {
    out << "saved " << runtime::CheckpointPath(parsed.Get("save")) << " at step "
        << job.loaded.steps + job.steps << "\n";
  }
  // The total to the microsecond: scripts take step times from differences of totals.
  out << "step time " << FormatSeconds(result.seconds / static_cast<double>(job.steps))
      << " (mean of " << job.steps << " steps, " << FormatFixed(result.seconds * 1e3, 3)
      << " ms in all)\n";
  if (reference.empty()) return true;
  const double tolerance = CheckTolerance(job.model.strategy);
  const bool within = worst <= tolerance;
  out << "largest relative difference from the reference: " << std::scientific
      << std::setprecision(2) << worst << (within ? ", within " : ", BEYOND ") << tolerance
      << std::defaultfloat << " (the tolerance of " << DTypeName(job.model.strategy.precision)
      << ")\n";
  return within;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args, std::ostream& out) {
  const ArgParser parser = RunParser();
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  std::unique_ptr<comm::MpiSession> mpi;
  if (comm::MpiSession::LaunchedByMpirun()) {
    mpi = std::make_unique<comm::MpiSession>("twinflow run",
                                             parsed.GetPositiveDouble("startup-timeout"));
  }
  const int rank = mpi ? mpi->rank() : 0;
  const int ranks = mpi ? mpi->size() : 1;

  // Startup, on every rank: build, compile (or load), then agree on the job.
  const graph::OpRegistry registry = ops::BuiltinOps();
  const kernels::KernelRegistry kernels = kernels::BuiltinKernels();
  RunJob job;
  std::string job_text;
  try {
    job = PrepareJob(parsed, registry, mpi.get(), rank, ranks);
    job_text = JobText(job.plan, job.steps, job.data_seed, job.loaded.steps, job.feed);
  } catch (const Error& e) {
    if (ranks == 1) throw;
    job_text = "error " + std::to_string(ExitCodeFor(e.kind())) + " " + e.message();
  }
  if (mpi) {
    try {
      AgreeOnJob(job_text, rank, parsed.GetPositiveDouble("startup-timeout"));
    } catch (const TimeoutError& e) {
      // A rank did not answer: nothing more can be agreed with it; end the job.
      ReportError("twinflow run: error: " + e.message());
      mpi->Abort(ExitCodeFor(e.kind()));
    } catch (const Error& e) {
      // Every rank prints its refusal before any exits: mpirun ends the others as soon as one
      // rank exits non-zero, which would cut their reports short.
      ReportError("twinflow run: error: " + e.message());
      comm::AllgatherBytes({});
      return ExitCodeFor(e.kind());
    }
  }

  try {
    std::unique_ptr<runtime::Transport> transport;
    if (mpi && ranks > 1) transport = MakeTransport(job.plan, *mpi, out);
    const runtime::DeviceOptions device_options{parsed.Given("tf32")};
    runtime::ThreadedExecutor executor(
        job.plan, kernels, transport.get(),
        [device_options](const plan::Device& d, const runtime::DevicePlace& place) {
          return runtime::MakeDeviceWith(d, place, device_options);
        });
    const runtime::RunResult result = TrainAndSave(parsed, job, executor, transport.get(), rank);
    if (rank != 0) return 0;  // rank 0 reports for all
    const std::vector<double> reference = ReferenceLosses(parsed, registry, kernels, job);
    return ReportRun(out, parsed, job, result, reference, mpi.get(), ranks) ? 0 : 1;
  } catch (const Error& e) {
    if (ranks == 1) throw;
    // The other ranks may be waiting on this one: end them all, naming the culprit.
    ReportError("twinflow run: error: rank " + std::to_string(rank) + ": " + e.message());
    // After a stall every surviving rank's watchdog fires, but not at once: a loaded host
    // delays some by seconds. Give the others one more watchdog period and probe to report
    // too before the abort ends them (at most 10 s more: the job has hung already).
    if (e.kind() == ErrorKind::kTimeout) {
      const double grace =
          std::min(parsed.GetPositiveDouble("watchdog"), 8.0) + runtime::kLivenessProbeSeconds;
      std::this_thread::sleep_for(std::chrono::duration<double>(grace));
    }
    mpi->Abort(ExitCodeFor(e.kind()));
  }
}

}  // namespace twinflow::launcher
