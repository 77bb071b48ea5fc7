#include "planner/tune_candidates.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::planner {
namespace {

using parallel::Field;
using parallel::Recompute;
using parallel::Schedule;
using parallel::ZeroStage;

// The micro-batch counts a replica of `dp` tries: the divisors of its share of the batch (the
// one --micro-batch-size makes, when given), or the powers of two when the batch is unknown;
// none below pp, none above max_mb.
std::vector<int64_t> MicroBatchCounts(const CandidateSpace& space, int64_t dp, int64_t pp) {
  std::vector<int64_t> out;
  const int64_t cap = space.max_mb > 0 ? space.max_mb : space.batch;
  const auto keep = [&](int64_t mb) {
    if (mb >= pp && mb <= cap) out.push_back(mb);
  };
  if (space.batch == 0) {
    for (int64_t mb = 1; mb <= cap; mb *= 2) keep(mb);
    return out;
  }
  if (space.batch % dp != 0) return out;  // a replica's share must be whole samples
  const int64_t share = space.batch / dp;
  if (space.micro_batch_size > 0) {
    if (share % space.micro_batch_size == 0) keep(share / space.micro_batch_size);
    return out;
  }
  for (int64_t mb = 1; mb <= share; ++mb) {
    if (share % mb == 0) keep(mb);
  }
  return out;
}

// The schedules of pp stages and mb micro-batches, with their chunks per rank (vp).
std::vector<std::pair<Schedule, int64_t>> Schedules(int64_t pp, int64_t mb, int64_t layers) {
  if (pp == 1) return {{Schedule::kOneFOneB, 1}};
  std::vector<std::pair<Schedule, int64_t>> out = {
      {Schedule::kOneFOneB, 1}, {Schedule::kGPipe, 1}, {Schedule::kZeroBubbleH1, 1}};
  if (mb % pp != 0) return out;  // interleaving needs whole rounds of pp micro-batches
  for (int64_t vp = 2; vp <= kMaxChunks; ++vp) {
    if (layers == 0 ? vp == 2 : layers % (pp * vp) == 0) out.push_back({Schedule::kOneFOneB, vp});
  }
  return out;
}

std::vector<ZeroStage> ZeroStages(const CandidateSpace& space, int64_t dp) {
  if (space.base.Gives(Field::kZero) || dp == 1) return {space.base.zero};
  return {ZeroStage::kNone, ZeroStage::kOptimizerState};
}

std::vector<Recompute> RecomputeModes(const CandidateSpace& space) {
  if (space.base.Gives(Field::kRecompute) || space.recompute.empty()) {
    return {space.base.recompute};
  }
  return space.recompute;
}

// `s` with each ZeRO stage and recomputation mode the space varies, appended to `out`.
void AddMemoryVariants(const CandidateSpace& space, const parallel::Strategy& s,
                       std::vector<parallel::Strategy>& out) {
  for (const ZeroStage zero : ZeroStages(space, s.dp)) {
    for (const Recompute recompute : RecomputeModes(space)) {
      out.push_back(s);
      out.back().zero = zero;
      out.back().recompute = recompute;
    }
  }
}

}  // namespace

std::vector<parallel::Strategy> EnumerateCandidates(const CandidateSpace& space) {
  if (space.batch == 0 && space.max_mb == 0) {
    throw InvalidArgumentError("tune: neither a batch nor a most micro-batches bounds the search");
  }
  const int64_t devices = space.devices;
  std::vector<parallel::Strategy> out;
  for (int64_t tp = 1; tp <= std::min(devices, space.per_node); tp *= 2) {
    for (int64_t pp = 1; tp * pp <= devices && (pp == 1 || space.pipeline); pp *= 2) {
      if (devices % (tp * pp) != 0 || (space.layers > 0 && pp > space.layers)) continue;
      const int64_t dp = devices / (tp * pp);
      for (const int64_t mb : MicroBatchCounts(space, dp, pp)) {
        for (const auto& [schedule, vp] : Schedules(pp, mb, space.layers)) {
          for (const bool sp : {false, true}) {
            if (sp && (tp == 1 || !space.sequence_parallel)) continue;
            parallel::Strategy s = space.base;
            s.dp = dp, s.tp = tp, s.pp = pp, s.micro_batches = mb, s.schedule = schedule;
            s.virtual_stages = vp, s.sequence_parallel = sp;
            s.dp_source = s.tp_source = s.pp_source = parallel::DegreeSource::kGiven;
            for (Field f : {Field::kDp, Field::kTp, Field::kPp, Field::kMb}) s.Give(f);
            AddMemoryVariants(space, s, out);
          }
        }
      }
    }
  }
  return out;
}

std::vector<std::string> FitSpaceToModel(CandidateSpace& space, TunedModel& model, bool gpu) {
  std::vector<std::string> lines;
  const bool gpu_llm = gpu && model.decoder;
  if (gpu_llm && !space.base.Gives(Field::kPrecision)) {
    space.base.precision = DType::kBF16;
    space.base.Give(Field::kPrecision);
    lines.push_back(
        "tuning in bf16, as LLMs train on GPUs (precision=fp32 in the options to change)");
  }
  if (gpu_llm && !model.attention_given && !model.fused_attention) {
    model.fused_attention = true;
    lines.push_back(
        "tuning with fused attention, as LLMs train on GPUs (choose the attention to change)");
  }
  space.batch = model.batch;
  space.layers = model.layers;
  space.recompute.clear();
  if (model.recomputes) space.recompute = {Recompute::kNone, Recompute::kFull};
  if (model.recomputes && model.decoder && !model.fused_attention) {
    space.recompute.insert(space.recompute.begin() + 1, Recompute::kSelective);
  }
  return lines;
}

parallel::Strategy ParseTuneOptions(const std::string& text) {
  if (text.empty()) return {};
  const parallel::Strategy base = parallel::ParseStrategy(text);
  if (base.automatic) throw InvalidArgumentError("auto: the tuner varies the degrees itself");
  for (Field f :
       {Field::kDp, Field::kTp, Field::kPp, Field::kMb, Field::kVp, Field::kSchedule, Field::kSp}) {
    if (base.Gives(f)) {
      throw InvalidArgumentError(std::string("'") + parallel::FieldName(f) +
                                 "' is what the tuner varies; options keep only the others");
    }
  }
  return base;
}

}  // namespace twinflow::planner
