#pragma once
// Strategy: how a model is parallelised, from a string such as
// "dp=2,tp=2,pp=1,mb=4,schedule=1f1b" or "auto".
//   dp  data-parallel degree: the batch is split over it
//   tp  tensor-parallel degree: Megatron-style, weights split column- then row-wise
//   pp  pipeline stages: consecutive layers on consecutive groups of dp*tp devices
//   mb  micro-batches per step (the pipeline schedule's unit)
//   vp  model chunks per pipeline rank (Megatron's virtual pipeline): with vp=V the layers
//       are cut into pp*V virtual stages, and rank r holds stages r, r + pp, ...; the
//       interleaved 1F1B schedule (compiler/pipeline_schedule.h) then shrinks the bubble V
//       times. Needs pp > 1, schedule 1f1b, and mb a multiple of pp
//   schedule  gpipe | 1f1b | zb-h1: ZB-H1 (Qi et al. 2024) is 1F1B with the backward split into
//             input and weight gradients, the weight gradients run later to fill the drain
//             (compiler/pipeline_schedule.h); one chunk per rank (no vp)
//   recompute none | selective | full: activation recomputation (graph/autograd.h). full:
//             each layer's forward run again in the backward pass instead of keeping its
//             activations; selective (Korthikanti et al. 2022): only each block's attention
//             core (scores, mask, softmax, context), whose [seq, seq] tensors are the largest
//             and cheapest to recompute; nothing under fused attention, which keeps none
//   overlap   on | off: whether collectives run beside the computation (on, the default: a
//             gradient's all-reduce overlaps the rest of the backward pass, as in DDP, and holds
//             its input and output until the update) or in the device's order (off: less memory,
//             no overlap; compiler/task_chains.h)
//   bucket    MiB (default 25, DDP's bucket_cap_mb): the gradients of each data-parallel group
//             are all-reduced in buckets of about this size, each one message (one collective
//             task over several tensors; compiler/lower_boxing.cc), so a model of many small
//             gradients pays a collective's latency per bucket, not per gradient. A gradient of
//             the size or more has its own all-reduce; 0: every gradient its own
//   precision fp32 | bf16 | fp16: the type the forward and backward passes compute and store
//             in. Under bf16/fp16 weights stay fp32 variables (the master copy; optimizer state
//             too), cast to the low type where the forward pass reads them, and gradients are
//             accumulated and reduced in fp32 (graph/graph_builder.h, SetAutocast). The loss
//             computes in fp32.
//   grad_reduce fp32 | the precision's type: where weight gradients are accumulated over
//             micro-batches and summed over dp. fp32 (the default; Megatron's
//             --accumulate-allreduce-grads-in-fp32, which it sets for bf16): each gradient is
//             widened while still partial, accumulated and all-reduced in fp32, once a step.
//             bf16/fp16: the search may sum it in the low type before widening, at half the
//             bytes, once per micro-batch.
//   sp        true | false: Megatron's sequence parallelism (Korthikanti et al. 2022,
//             --sequence-parallel): the residual stream between the tensor-parallel regions
//             (norms, residual adds, dropout's place) is split on its sequence axis over tp
//             instead of replicated, so the all-reduce of a row-parallel output becomes a
//             reduce-scatter and the column-parallel input an all-gather, and those
//             activations take 1/tp of the memory (models/pins.h, PinActivation)
//   zero      0 | 1: ZeRO stage 1 (Rajbhandari et al. 2020; Megatron's
//             --use-distributed-optimizer): optimizer state (momentum, Adam moments) split over
//             dp, so each dp rank updates its shard of every parameter: the gradient is
//             reduce-scattered into the shards and the new values all-gathered, where plain
//             data parallelism all-reduces the gradient and updates whole (models/pins.h,
//             PinShardedOptimizerState). Stages 2 and 3 are not implemented yet (ZeroStage).
// "auto" leaves every layout to the SBP search on one placement (`hierarchy`).
//
// Degrees are Megatron's: dp, tp and pp pin the layouts of the ops they govern (models/pins.h).
// A degree may be omitted (dp: inferred from the devices, `Resolve`; tp and pp: 1) or written
// `auto` (dp and tp: inferred the same way, and that mesh axis's layouts are left to the SBP
// search, everything else stays pinned). pp=auto is refused: the search does not place stages.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/shape.h"
#include "engine/parallel/schedule.h"
#include "engine/sbp/placement.h"

namespace twinflow::parallel {

enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute recompute);  // "none", "selective", "full"

// ZeRO's stages (Rajbhandari et al. 2020) by what they shard over dp; the strategy's `zero=N`.
enum class ZeroStage { kNone = 0, kOptimizerState = 1 };

// The defaults of the fields a strategy may omit, each stated once here.
inline constexpr int64_t kDefaultBucketMib = 25;  // DDP's bucket_cap_mb

// The fields of a strategy's text, in the order the error for an unknown one lists them.
enum class Field {
  kDp,
  kTp,
  kPp,
  kMb,
  kVp,
  kSchedule,
  kRecompute,
  kOverlap,
  kBucket,
  kPrecision,
  kGradReduce,
  kSp,
  kZero,
};
inline constexpr int kFieldCount = 13;
const char* FieldName(Field field);  // "dp", "tp", ..., "grad_reduce", "sp", "zero"

// How a strategy gave a degree.
enum class DegreeSource {
  kOmitted,   // not written: dp is inferred from the devices, tp and pp are 1
  kGiven,     // a number
  kSearched,  // `auto`: inferred like an omitted dp, its mesh axis left to the search
};

struct Strategy {
  bool automatic = false;
  int64_t dp = 1;  // the degrees as resolved (Resolve); 1 until then where not given
  int64_t tp = 1;
  int64_t pp = 1;
  DegreeSource dp_source = DegreeSource::kOmitted;
  DegreeSource tp_source = DegreeSource::kOmitted;
  DegreeSource pp_source = DegreeSource::kOmitted;
  int64_t micro_batches = 1;
  int64_t virtual_stages = 1;  // vp: model chunks per pipeline rank
  Schedule schedule = Schedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;
  bool overlap = true;  // collectives run beside the computation (see the header comment)
  int64_t bucket_mib = kDefaultBucketMib;  // gradient all-reduce buckets (see above); 0: none
  DType precision = DType::kF32;           // kF32, kBF16 or kF16 (see the header comment)
  DType grad_reduce = DType::kF32;         // kF32 or `precision`
  ZeroStage zero = ZeroStage::kNone;       // see the header comment
  bool sequence_parallel = false;          // sp (see the header comment)
  Shape hierarchy;                         // automatic only; empty: 1-D over all devices
  uint32_t given = 0;                      // the fields its text wrote, a bit per Field

  // Whether the text wrote `field` (mb= that a --micro-batch-size must agree with, a zero= or
  // recompute= the tuner must keep).
  bool Gives(Field field) const { return (given >> static_cast<int>(field)) & 1u; }
  void Give(Field field) { given |= 1u << static_cast<int>(field); }

  int64_t devices() const { return dp * tp * pp; }
  // Pipeline stages the layers are cut into: pp, or pp * vp interleaved.
  int64_t stages() const { return pp * virtual_stages; }
  std::string StagesText() const;  // "pp=4", or "pp*vp=8" interleaved: for error messages
  // The device count when none is given: the product of the degrees, an inferred one taken
  // as 1 (so `tp=2` alone means 2 devices).
  int64_t DefaultDevices() const;
  // Whether dp (or, written auto, tp) is still to be inferred from the device count.
  bool InfersDegree() const;
  // Infers the missing degree from `devices` and checks the product. Idempotent. Throws
  // InvalidArgumentError naming the degree and the device count when they do not fit.
  void Resolve(int64_t devices);
  // Mesh axes of a stage placement ([dp, tp]) whose layouts the search chooses (fields
  // written `auto`); empty for a fully pinned strategy.
  std::vector<int> SearchedAxes() const;
  // Every field, resolved: what reports print ("dp=2,tp=2,pp=1,mb=1,schedule=1f1b").
  std::string ToString() const;
  // The degrees and mb, then only what differs from the defaults (the schedule only when
  // pipelined): how the tuner lists its candidates ("dp=2,tp=2,pp=1,mb=1,zero=1"). Parses back
  // to the same strategy.
  std::string Compact() const;
  // The low type GraphBuilder::SetAutocast is given while a model's forward pass is written;
  // nullopt for fp32.
  std::optional<DType> Autocast() const;
  // The placement of pipeline stage `stage` (of stages(); automatic: the one placement) on
  // `devices` devices of `type`: [dp, tp] over the contiguous range of ids of rank stage % pp.
  sbp::Placement StagePlacement(int64_t stage, int64_t devices,
                                DeviceType type = DeviceType::kCpu) const;
  // Throws InvalidArgumentError naming the field when the degrees do not multiply to
  // `devices` or the automatic hierarchy does not.
  void CheckDevices(int64_t devices) const;
  // The same strategy resolved for `devices` (Resolve on a copy).
  Strategy Resolved(int64_t devices) const;
};

// Throws InvalidArgumentError naming the bad field: unknown keys, non-positive or malformed
// numbers, an unknown schedule, a repeated key, pp=auto, dp and tp both auto, vp without
// pp > 1 and 1f1b, or with mb not a multiple of pp.
Strategy ParseStrategy(const std::string& text);

// Megatron's conditions for the interleaved schedule (vp > 1: pp > 1, 1f1b, mb a multiple of
// pp, or 1); InvalidArgumentError naming vp otherwise. ParseStrategy checks them, and so must
// whoever sets mb after parsing (--micro-batch-size).
void CheckInterleaving(const Strategy& strategy);

}  // namespace twinflow::parallel
