// Lifetime-based memory plans and the 1F1B order, on compiled training Plans: shared bytes
// are never overwritten while a reader still needs them, whatever order messages arrive in;
// sharing really saves memory; and 1F1B keeps at most (stages - stage) micro-batches between
// their forward and their backward on every stage, where GPipe lets them all in.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline_schedule.h"
#include "engine/compiler/plan_memory.h"
#include "engine/compiler/task_chains.h"
#include "engine/ops/attention.h"
#include "engine/runtime/test_executor.h"
#include "models/model.h"
#include "simulator/sim_executor.h"
#include "tests/support/tiny_gpt.h"
#include "tests/support/training_plan.h"

namespace twinflow {
namespace {

const graph::OpRegistry& Ops() { return testing::TrainingOps(); }

models::BuiltModel BuildGpt(const std::string& strategy,
                            const models::GptConfig& config = testing::TinyGptConfig(),
                            int64_t devices = 4, const std::string& optimizer = "adam:lr=0.01") {
  return testing::BuildTrainingGpt(strategy, config, devices, optimizer);
}

plan::Plan CompileModel(const models::BuiltModel& model) { return testing::CompileTraining(model); }

plan::Plan CompileGpt(const std::string& strategy) { return CompileModel(BuildGpt(strategy)); }

// Two steps of the tiny GPT's Plan under `strategy` on `cluster`.
sim::SimResult SimulateGpt(const std::string& strategy, const sim::Topology& cluster) {
  sim::SimOptions options;
  options.steps = 2;
  return sim::Simulate(CompileGpt(strategy), cluster, options);
}

int64_t UnsharedBytes(const plan::Plan& plan, int device) {
  int64_t bytes = 0;
  for (const plan::Regst& r : plan.regsts()) {
    if (plan.tasks(static_cast<int>(r.producer())).device() != device) continue;
    bytes += r.slots() * ((r.bytes_per_slot() + 63) / 64 * 64);
  }
  return bytes;
}

const char* const kStrategies[] = {"dp=2,tp=2",
                                   "tp=4",
                                   "dp=2,tp=2,recompute=full",
                                   "dp=2,pp=2,mb=4,schedule=gpipe",
                                   "dp=2,pp=2,mb=4,schedule=1f1b",
                                   "tp=2,pp=2,mb=4,schedule=1f1b",
                                   "dp=2,pp=2,mb=4,schedule=1f1b,recompute=full"};

TEST(MemoryPlan, SharedBytesAreNeverOverwrittenUnderRandomDelivery) {
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const runtime::TestRunResult r = runtime::RunWithRandomDelivery(plan, 2, seed);
      ASSERT_TRUE(r.finished) << strategy << " seed " << seed << "\n" << r.report;
      ASSERT_TRUE(r.violations.empty()) << strategy << " seed " << seed << ": " << r.violations[0];
    }
  }
}

TEST(MemoryPlan, SharingShrinksEveryArenaAndThePeakFitsIt) {
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    for (const plan::MemoryPlan& m : plan.memory()) {
      const int64_t unshared = UnsharedBytes(plan, m.device());
      EXPECT_LT(m.arena_bytes(), unshared) << strategy << " device " << m.device();
      EXPECT_LE(m.peak_bytes(), m.arena_bytes()) << strategy << " device " << m.device();
      RecordProperty(std::string(strategy) + " device " + std::to_string(m.device()),
                     std::to_string(m.arena_bytes()) + " of " + std::to_string(unshared));
    }
  }
}

// The simulator counts live slots as the runtime's arena does; on compiled Plans its live peak
// stays within the memory plan's peak on every device.
TEST(MemoryPlan, SimulatedLiveBytesStayWithinThePlannedPeak) {
  const sim::Topology cluster(sim::Preset("cpu-local", 2));
  for (const char* strategy : kStrategies) {
    const sim::SimResult r = SimulateGpt(strategy, cluster);
    ASSERT_TRUE(r.finished) << strategy << "\n" << r.deadlock_report;
    for (const sim::DeviceReport& d : r.devices) {
      EXPECT_GT(d.live_peak_bytes, 0) << strategy << " " << d.name;
      EXPECT_LE(d.live_peak_bytes, d.peak_bytes) << strategy << " " << d.name;
    }
  }
}

// With one micro-batch a device's forward and backward are one chain, so what the backward
// reads of the forward (recomputation's checkpoints, the logits) and the optimizer's updated
// values share bytes by their lifetimes: the planned peak is the live peak the simulated run
// reaches, to within 1% (when each lived for the whole step the 7.5B GPT planned twice its live
// peak), and the arena adds only first fit's slack (4 to 5% on these 100 KiB arenas of
// tensors of a few KiB; 2.3% on the 7.5B GPT, docs/compiler.md).
TEST(MemoryPlan, OneMicroBatchPlansTheLivePeak) {
  const sim::Topology cluster(sim::Preset("dgx-a100", 1));
  for (const char* strategy : {"dp=2,tp=2,recompute=full", "dp=2,tp=2", "tp=4,recompute=full"}) {
    const sim::SimResult r = SimulateGpt(strategy, cluster);
    ASSERT_TRUE(r.finished) << strategy << "\n" << r.deadlock_report;
    for (const sim::DeviceReport& d : r.devices) {
      RecordProperty(std::string(strategy) + " " + d.name,
                     "arena " + std::to_string(d.arena_bytes) + ", planned peak " +
                         std::to_string(d.peak_bytes) + ", live peak " +
                         std::to_string(d.live_peak_bytes));
      EXPECT_LE(d.live_peak_bytes, d.peak_bytes) << strategy << " " << d.name;
      EXPECT_LE(d.peak_bytes, d.arena_bytes) << strategy << " " << d.name;
      // The planned peak is the live peak (within 1%); the arena adds first fit's slack.
      EXPECT_LE(static_cast<double>(d.peak_bytes), 1.01 * static_cast<double>(d.live_peak_bytes))
          << strategy << " " << d.name;
      EXPECT_LE(static_cast<double>(d.arena_bytes), 1.08 * static_cast<double>(d.live_peak_bytes))
          << strategy << " " << d.name;
    }
  }
}

// The memory report's split of the planned peak: the categories add up to it on every device,
// and an Adam-trained model has weights, optimizer state and activations at its peak (gradients
// only where the peak comes after the first weight gradient, not under tp=4).
TEST(MemoryPlan, CategoriesAddUpToThePlannedPeak) {
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    const std::vector<compiler::CategoryBytes> peaks = compiler::PlannedPeaks(plan);
    ASSERT_EQ(peaks.size(), static_cast<size_t>(plan.devices_size()));
    for (const plan::MemoryPlan& m : plan.memory()) {
      const compiler::CategoryBytes& b = peaks[m.device()];
      int64_t total = 0;
      for (int64_t bytes : b) total += bytes;
      EXPECT_EQ(total, m.peak_bytes()) << strategy << " device " << m.device();
      for (compiler::MemoryCategory c :
           {compiler::MemoryCategory::kWeights, compiler::MemoryCategory::kOptimizerState,
            compiler::MemoryCategory::kActivations}) {
        EXPECT_GT(b[static_cast<int>(c)], 0)
            << strategy << " device " << m.device() << " " << compiler::MemoryCategoryName(c);
      }
    }
  }
}

// The bytes of every register of `category`, over all devices.
int64_t BytesOf(const plan::Plan& plan, compiler::MemoryCategory category) {
  const std::vector<compiler::MemoryCategory> categories = compiler::RegstCategories(plan);
  int64_t bytes = 0;
  for (const plan::Regst& r : plan.regsts()) {
    if (categories[r.id()] == category) bytes += r.slots() * r.bytes_per_slot();
  }
  return bytes;
}

// ZeRO stage 1: the Adam moments split over dp, so each device plans half the optimizer
// state (the step counters, scalars, stay whole), the same weights and the same gradients
// (counted as such though an all-gather now stands between update and assign); the gradient is
// reduce-scattered into the shards and the new weights all-gathered, so the Plan moves the
// same bytes as the all-reduce it replaces.
TEST(MemoryPlan, ZeroOneHalvesTheOptimizerStateOverTwoReplicas) {
  for (const std::string base : {"dp=2,tp=2", "dp=2,pp=2,mb=2"}) {
    // Without buckets, whose all-reduce holds its gradients until the last has joined and so
    // moves the peak: ZeRO-1 reduce-scatters each gradient on its own.
    const plan::Plan plain = CompileGpt(base + ",bucket=0");
    const plan::Plan zero = CompileGpt(base + ",zero=1");
    const std::vector<compiler::CategoryBytes> before = compiler::PlannedPeaks(plain);
    const std::vector<compiler::CategoryBytes> after = compiler::PlannedPeaks(zero);
    const int state = static_cast<int>(compiler::MemoryCategory::kOptimizerState);
    const int weights = static_cast<int>(compiler::MemoryCategory::kWeights);
    const double grads = static_cast<double>(BytesOf(zero, compiler::MemoryCategory::kGradients)) /
                         BytesOf(plain, compiler::MemoryCategory::kGradients);
    EXPECT_GT(grads, 0.9) << base;
    EXPECT_LT(grads, 1.1) << base;
    for (size_t d = 0; d < before.size(); ++d) {
      const double ratio = static_cast<double>(after[d][state]) / before[d][state];
      EXPECT_GT(ratio, 0.45) << base << " device " << d;
      EXPECT_LT(ratio, 0.55) << base << " device " << d;
      EXPECT_EQ(after[d][weights], before[d][weights]) << base << " device " << d;
    }
  }
}

// Sequence parallelism (sp=true) splits the residual stream over tp: each block keeps its two
// norms' inputs [batch, seq, hidden] as a 1/tp slice instead of whole, and nothing else
// changes size, so the planned activations shrink by 2 layers (1 - 1/tp) of such a tensor, or
// one fewer where the search keeps the embedding sum (the first block's norm input) whole
// beside the replicated position table and slices it there (as the accelerator cost model
// does).
TEST(MemoryPlan, SequenceParallelismSlicesTheResidualStream) {
  models::GptConfig config;
  config.layers = 4;
  config.hidden = 512;
  config.heads = 8;
  config.sequence = 256;
  config.vocab = 512;
  config.batch = 8;
  config.attention = ops::AttentionKind::kFused;
  const auto activations = [&](const std::string& strategy) {
    const plan::Plan plan = CompileModel(BuildGpt(strategy, config));
    return compiler::PlannedPeaks(
        plan)[0][static_cast<int>(compiler::MemoryCategory::kActivations)];
  };
  const int64_t residual = 4 * (config.batch / 2) * config.sequence * config.hidden;  // f32
  const int64_t slice_saves = residual / 2;                                           // tp=2
  const int64_t got = activations("dp=2,tp=2") - activations("dp=2,tp=2,sp=true");
  RecordProperty("saved", std::to_string(got) + " bytes, " + std::to_string(slice_saves) +
                              " per residual-stream tensor");
  EXPECT_EQ(got % slice_saves, 0) << got;
  EXPECT_GE(got / slice_saves, 2 * config.layers - 1);
  EXPECT_LE(got / slice_saves, 2 * config.layers);
}

// Per device: the most micro-batches whose forward chain has started while their backward
// chain has not yet finished, over a run with random delivery.
std::map<int32_t, int64_t> MostInFlight(const plan::Plan& plan, uint64_t seed) {
  std::map<int32_t, int64_t> first_forward;  // device -> its forward chain's first task
  std::map<int32_t, int64_t> last_backward;
  for (const compiler::TaskChain& chain : compiler::FindTaskChains(plan)) {
    if (chain.acts_per_step != plan.pieces_per_step()) continue;
    if (chain.forward)
      first_forward[chain.device] = chain.tasks.front();
    else
      last_backward[chain.device] = chain.tasks.back();
  }
  const runtime::TestRunResult r = runtime::RunWithRandomDelivery(plan, 2, seed);
  EXPECT_TRUE(r.finished) << r.report;
  std::map<int32_t, std::set<int64_t>> open;  // device -> pieces started and not finished
  std::map<int32_t, int64_t> most;
  for (const runtime::Launch& launch : r.launches) {
    const int32_t device = plan.tasks(static_cast<int>(launch.task)).device();
    // A backward chain's last act ends a micro-batch's stay: acts of one task never overlap,
    // so by the time the next forward may start (which it must wait for) it has finished.
    if (last_backward.count(device) && launch.task == last_backward[device]) {
      open[device].erase(launch.piece);
    }
    if (first_forward.count(device) && launch.task == first_forward[device]) {
      open[device].insert(launch.piece);
      most[device] = std::max<int64_t>(most[device], static_cast<int64_t>(open[device].size()));
    }
  }
  return most;
}

TEST(PipelineOrder, OneFOneBKeepsAtMostStagesMinusStageMicroBatchesInFlight) {
  const plan::Plan one_f_one_b = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  const plan::Plan gpipe = CompileGpt("dp=2,pp=2,mb=4,schedule=gpipe");
  int64_t gpipe_most = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (const auto& [device, most] : MostInFlight(one_f_one_b, seed)) {
      const int stage = one_f_one_b.devices(device).index() < 2 ? 0 : 1;  // stage 0: cpu:0-1
      EXPECT_LE(most, 2 - stage) << "device " << device << " seed " << seed;
    }
    for (const auto& [device, most] : MostInFlight(gpipe, seed)) {
      gpipe_most = std::max(gpipe_most, most);
    }
  }
  EXPECT_GT(gpipe_most, 2) << "GPipe lets more micro-batches in, so the bound is 1F1B's doing";
}

// Whatever order messages arrive in, every device starts its chains' micro-steps exactly in
// its schedule's order (compiler/pipeline_schedule.h), step after step: the order registers
// alone enforce it. `sequence` gives rank r's order; a rank's chunk c is stage c * ranks + r.
void ExpectTheScheduleOrder(const std::string& strategy, int ranks,
                            const std::function<std::vector<compiler::MicroStep>(int)>& sequence) {
  models::GptConfig config = testing::TinyGptConfig();
  config.layers = 4;
  const models::BuiltModel model = BuildGpt(strategy, config);
  const int64_t micro_batches = model.strategy.micro_batches;
  const plan::Plan plan = CompileModel(model);
  std::map<int64_t, std::pair<int32_t, compiler::StepKind>> head;  // first task -> step
  for (const compiler::TaskChain& chain : compiler::FindTaskChains(plan)) {
    const compiler::StepKind kind = chain.forward  ? compiler::StepKind::kForward
                                    : chain.weight ? compiler::StepKind::kWeight
                                                   : compiler::StepKind::kBackward;
    if (chain.acts_per_step == micro_batches) head[chain.tasks.front()] = {chain.stage, kind};
  }
  const int64_t steps = 2;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const runtime::TestRunResult r = runtime::RunWithRandomDelivery(plan, steps, seed);
    ASSERT_TRUE(r.finished) << r.report;
    std::map<int32_t, std::vector<compiler::MicroStep>> got;
    for (const runtime::Launch& launch : r.launches) {
      const auto it = head.find(launch.task);
      if (it == head.end()) continue;
      const int32_t device = plan.tasks(static_cast<int>(launch.task)).device();
      got[device].push_back(
          {it->second.first / ranks, it->second.second, launch.piece % micro_batches});
    }
    ASSERT_EQ(got.size(), 4u) << strategy;
    for (const auto& [device, launched] : got) {
      const int rank = static_cast<int>(plan.devices(device).index() * ranks / 4);
      const std::vector<compiler::MicroStep> one = sequence(rank);
      ASSERT_EQ(launched.size(), one.size() * steps) << strategy << " device " << device;
      for (size_t i = 0; i < launched.size(); ++i) {
        const compiler::MicroStep& want = one[i % one.size()];
        EXPECT_TRUE(launched[i].chunk == want.chunk && launched[i].kind == want.kind &&
                    launched[i].micro_batch == want.micro_batch)
            << strategy << " device " << device << " seed " << seed << " micro-step " << i;
      }
    }
  }
}

TEST(PipelineOrder, InterleavedDevicesRunTheirChunksInTheScheduleOrder) {
  ExpectTheScheduleOrder("dp=2,pp=2,vp=2,mb=4", 2,
                         [](int rank) { return compiler::PipelineSequence(2, 2, 4, rank); });
}

TEST(PipelineOrder, ZeroBubbleDevicesRunTheirWeightPassesInTheScheduleOrder) {
  ExpectTheScheduleOrder("pp=4,mb=8,schedule=zb-h1", 4,
                         [](int rank) { return compiler::ZeroBubbleSequence(4, 8, rank); });
}

// Full recomputation: a block's internal forward results (read by no later block) are read by
// no backward op but the recomputation's gates; the backward pass reads recomputed copies.
TEST(Recompute, NoBackwardOpReadsABlocksInternalResults) {
  const models::BuiltModel model = BuildGpt("dp=2,pp=2,mb=4,schedule=1f1b,recompute=full");
  const graph::LogicalGraph& g = model.graph;
  auto block_of = [&](graph::OpId op) {  // "block1" for "block1/q/matmul"; "" elsewhere
    const std::string& name = g.op(op).name;
    return name.starts_with("block") ? name.substr(0, name.find('/')) : std::string();
  };
  int internal = 0, recomputed = 0;
  for (const graph::OpNode& op : g.ops()) {
    recomputed += op.name.ends_with("/recompute");
    if (g.IsBackward(op.id) || block_of(op.id).empty() || op.type == "variable") continue;
    for (graph::TensorId t : op.outputs) {
      bool inside = true;
      for (graph::OpId c : g.Consumers(t))
        inside &= g.IsBackward(c) || block_of(c) == block_of(op.id);
      if (!inside) continue;  // the block's output: the next block's input, kept
      ++internal;
      for (graph::OpId c : g.Consumers(t)) {
        EXPECT_TRUE(!g.IsBackward(c) || g.op(c).type == "recompute_gate")
            << g.op(c).name << " reads " << g.tensor(t).name;
      }
    }
  }
  EXPECT_GT(internal, 20);
  EXPECT_GT(recomputed, 20);
  // A block's last ops feed nothing the gradients read, so they are not recomputed.
  EXPECT_FALSE(g.FindOp("block1/residual2/recompute").has_value());
  EXPECT_TRUE(g.FindOp("block1/fc1/matmul/recompute").has_value());
}

// Recomputation trades time for memory: the first stage, which keeps the most micro-batches
// between their forward and backward passes, plans a smaller peak (the last stage keeps one,
// so there it only adds the recomputed buffers), the simulated step takes longer, and the
// model's flops (what MFU counts) stay those of the plain run.
TEST(Recompute, ShrinksThePeakCostsTimeAndLeavesTheModelFlops) {
  const sim::Topology cluster(sim::Preset("dgx-h100", 1));
  sim::SimOptions options;
  options.steps = 2;
  const plan::Plan plain = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  const plan::Plan recompute = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b,recompute=full");
  for (int d = 0; d < plain.devices_size(); ++d) {
    RecordProperty("device " + std::to_string(d), std::to_string(recompute.memory(d).peak_bytes()) +
                                                      " of " +
                                                      std::to_string(plain.memory(d).peak_bytes()));
    if (plain.devices(d).index() < 2) {  // stage 0: cpu:0-1
      EXPECT_LT(recompute.memory(d).peak_bytes(), plain.memory(d).peak_bytes()) << "device " << d;
    }
  }
  const sim::SimResult a = sim::Simulate(plain, cluster, options);
  const sim::SimResult b = sim::Simulate(recompute, cluster, options);
  ASSERT_TRUE(a.finished && b.finished);
  EXPECT_GT(b.step_s, a.step_s);
  EXPECT_NEAR(b.flops_per_step, a.flops_per_step, 1e-9 * a.flops_per_step);
  double recomputed_flops = 0;
  for (const plan::Task& t : recompute.tasks()) recomputed_flops += t.recomputes() ? t.flops() : 0;
  EXPECT_GT(recomputed_flops, 0);
}

// recompute=selective (Korthikanti et al. 2022) recomputes only each block's attention core:
// at sequence 64 the [seq, seq] probabilities are most of a block's activations, so the peak
// falls below the plain plan's, stays above full recomputation's, and the recomputed flops are
// a small share of full recomputation's (the scores and context matmuls only).
TEST(Recompute, SelectiveRecomputesTheAttentionCoreOnly) {
  const auto compile = [](const std::string& strategy) {
    models::GptConfig config = testing::TinyGptConfig();
    config.sequence = 64;
    return CompileModel(BuildGpt(strategy, config, 2));
  };
  const auto recomputed_flops = [](const plan::Plan& plan) {
    double flops = 0;
    for (const plan::Task& t : plan.tasks()) flops += t.recomputes() ? t.flops() : 0;
    return flops;
  };
  const plan::Plan none = compile("dp=2"), full = compile("dp=2,recompute=full");
  const plan::Plan selective = compile("dp=2,recompute=selective");
  for (int d = 0; d < none.devices_size(); ++d) {
    EXPECT_LT(selective.memory(d).peak_bytes(), none.memory(d).peak_bytes()) << "device " << d;
    EXPECT_GT(selective.memory(d).peak_bytes(), full.memory(d).peak_bytes()) << "device " << d;
  }
  EXPECT_GT(recomputed_flops(selective), 0);
  EXPECT_LT(recomputed_flops(selective), 0.5 * recomputed_flops(full));
}

// Slots follow what each register's readers need: what only an ACC reads has one; a step
// value repeated per micro-batch is repeated once per pass (forward, backward), each copy read
// by that pass alone and given at most two slots, while the activations the backward pass
// keeps get the schedule's (stage 0 of 2 under 1F1B: 2). A weight's backward REPEAT reads a
// snapshot that the in-place update waits for, never the variable itself.
TEST(PipelineSlots, AccInputsHaveOneSlotAndEachPassItsOwnRepeat) {
  const models::BuiltModel model = BuildGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  const plan::Plan plan = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  auto op_of = [&](const plan::Task& t) {
    return model.graph.FindOp(t.name().substr(0, t.name().rfind('@')));
  };
  int acc_inputs = 0, forward_repeats = 0, backward_repeats = 0;
  for (const plan::Regst& r : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(r.producer()));
    bool only_acc = r.consumers_size() > 0;
    for (int64_t c : r.consumers()) only_acc &= plan.tasks(static_cast<int>(c)).kind() == plan::ACC;
    if (only_acc) {
      ++acc_inputs;
      EXPECT_EQ(r.slots(), 1) << producer.name();
    }
    if (producer.kind() != plan::REPEAT) continue;
    EXPECT_LE(r.slots(), 2) << producer.name();
    const bool backward = producer.name().find("/repeat_backward@") != std::string::npos;
    // The backward pass's copy of a weight is repeated from a snapshot taken before the
    // in-place update may run (the snapshot is a reader the ASSIGN waits for).
    const plan::Task& source = plan.tasks(
        static_cast<int>(plan.regsts(static_cast<int>(producer.consumed_regsts(0))).producer()));
    if (backward) {
      EXPECT_NE(source.kind(), plan::VARIABLE) << producer.name();
    }
    if (source.name().find("/snapshot@") != std::string::npos) {
      bool waited_for = false;
      for (int64_t out : source.produced_regsts()) {
        for (int64_t c : plan.regsts(static_cast<int>(out)).consumers()) {
          waited_for |= plan.tasks(static_cast<int>(c)).kind() == plan::ASSIGN;
        }
      }
      EXPECT_TRUE(waited_for) << source.name();
    }
    (backward ? backward_repeats : forward_repeats) += 1;
    for (int64_t c : r.consumers()) {
      const auto op = op_of(plan.tasks(static_cast<int>(c)));
      if (op) {
        EXPECT_EQ(model.graph.IsBackward(*op), backward)
            << producer.name() << " -> " << plan.tasks(static_cast<int>(c)).name();
      }
    }
  }
  EXPECT_GT(acc_inputs, 0);
  EXPECT_GT(forward_repeats, 0);
  EXPECT_GT(backward_repeats, 0);
}

// Clipping by the global norm reads every gradient twice (its square sum, and the update after
// one more boxing step): the two readers share the gradient's ACC and first reduction, and
// the ACC sits in its producer's chain, so the micro-batch's gradient shares bytes there.
TEST(PipelineSlots, EachGradientHasOneAccInItsProducersChain) {
  const plan::Plan plan = CompileModel(BuildGpt(
      "dp=2,pp=2,mb=4,precision=bf16", testing::TinyGptConfig(), 4, "adam:lr=0.01,clip_grad=1.0"));
  const std::vector<bool> resident =
      compiler::ChainResidentRegsts(plan, compiler::FindTaskChains(plan));
  std::map<std::pair<std::string, int32_t>, int> accs;  // (accumulated tensor, device) -> ACCs
  int resident_inputs = 0;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::ACC) continue;
    ++accs[{t.name().substr(0, t.name().rfind("/acc@")), t.device()}];
    for (int64_t r : t.consumed_regsts()) {
      if (plan.regsts(static_cast<int>(r)).bytes_per_slot() > 0 && resident[r]) ++resident_inputs;
    }
  }
  ASSERT_GT(accs.size(), 10u);
  for (const auto& [key, count] : accs) EXPECT_EQ(count, 1) << key.first << " on " << key.second;
  // Every weight gradient's (the loss's ACC feeds a SINK at another rate and stays out).
  EXPECT_GE(resident_inputs, static_cast<int>(accs.size()) - 4);
}

// A stage's output read only by the next stage's copy has at most two slots, though stage 0
// keeps two micro-batches in flight under 1F1B and all four under GPipe.
TEST(PipelineSlots, WhatOnlyOtherDevicesReadHasTwoSlots) {
  for (const std::string strategy : {"pp=2,mb=4,schedule=1f1b", "pp=2,mb=4,schedule=gpipe"}) {
    const plan::Plan plan = CompileModel(BuildGpt(strategy, testing::TinyGptConfig(), 2));
    int sent = 0;
    for (const plan::Regst& r : plan.regsts()) {
      const plan::Task& producer = plan.tasks(static_cast<int>(r.producer()));
      bool elsewhere = r.consumers_size() > 0 && r.bytes_per_slot() > 0;
      for (int64_t c : r.consumers())
        elsewhere = elsewhere && plan.tasks(static_cast<int>(c)).device() != producer.device();
      if (!elsewhere) continue;
      ++sent;
      EXPECT_LE(r.slots(), 2) << strategy << ": " << producer.name();
    }
    EXPECT_GT(sent, 0) << strategy;
  }
}

// The REPEATs of the weights' 16-bit copies read in place: every output slot at the cast's
// one slot. (The training tests run such Plans: the arena checks that no bytes are overwritten
// while live, and the losses match the reference.)
TEST(PipelineSlots, RepeatsOfWeightCopiesReadInPlace) {
  const plan::Plan plan = CompileGpt("dp=2,pp=2,mb=4,precision=bf16");
  std::map<std::pair<int64_t, int32_t>, int64_t> offset;  // (regst, slot) -> offset
  for (const plan::MemoryPlan& m : plan.memory()) {
    for (const plan::SlotOffset& o : m.offsets()) offset[{o.regst(), o.slot()}] = o.offset();
  }
  int in_place = 0;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::REPEAT) continue;
    const plan::Regst& in = plan.regsts(static_cast<int>(t.consumed_regsts(0)));
    // All but those of a variable itself (fp32 step values), which the update writes in place.
    const bool variable = plan.tasks(static_cast<int>(in.producer())).kind() == plan::VARIABLE;
    EXPECT_EQ(t.repeat_in_place(), !variable) << t.name();
    if (!t.repeat_in_place()) continue;
    ++in_place;
    const plan::Regst& out = plan.regsts(static_cast<int>(t.produced_regsts(0)));
    for (int32_t slot = 0; slot < out.slots(); ++slot)
      EXPECT_EQ((offset[{out.id(), slot}]), (offset[{in.id(), 0}])) << t.name();
  }
  EXPECT_GT(in_place, 20);
}

}  // namespace
}  // namespace twinflow
