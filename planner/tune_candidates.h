#pragma once
// The strategies `twinflow tune` and `tw.tune` try: every (dp, tp, pp) the cluster allows, with
// every micro-batch count the batch allows, every pipeline schedule and chunking, sequence
// parallelism, ZeRO-1 and recomputation, each a parallel::Strategy built on the options every
// candidate keeps (--with).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/parallel/strategy.h"

namespace twinflow::planner {

// What the tuner may vary, and what it keeps.
struct CandidateSpace {
  int64_t devices = 1;
  int64_t per_node = 1;  // tensor parallelism stays inside a node
  // The step's batch in samples: a candidate's micro-batches divide its replica's share of it
  // (batch / dp), so every micro-batch size is tried. 0 (unknown): the powers of two up to
  // max_mb.
  int64_t batch = 0;
  // Megatron's --micro-batch-size, fixed in every candidate (mb = batch / (dp x it)); 0: every
  // size that divides the replica's share.
  int64_t micro_batch_size = 0;
  int64_t max_mb = 0;  // the most micro-batches per step; 0: no cap (needs a batch)
  // The blocks pipeline stages cut (a decoder's layers): pp takes at most this many, vp every V
  // in [2, kMaxChunks] with layers % (pp x V) == 0; 0 (unknown): any pp, V = 2 only.
  int64_t layers = 0;
  parallel::Strategy base;  // the options every candidate keeps (--with)
  // What the model's graph can express: a graph without pipeline stages (a Python graph that
  // never calls set_stage) gains nothing from pp or vp, one without sequence-parallel pins
  // nothing from sp; the tuner never ranks options that cannot change the graph.
  bool pipeline = true;
  bool sequence_parallel = true;
  // The recomputation modes that change this model's graph (selective does nothing under fused
  // attention, which keeps no scores), tried unless `base` gives recompute=.
  std::vector<parallel::Recompute> recompute = {parallel::Recompute::kNone,
                                                parallel::Recompute::kFull};
};

// The most model chunks per pipeline rank the tuner tries (Megatron's runs use 2 to 6).
inline constexpr int64_t kMaxChunks = 8;

// Every (dp, tp, pp) whose product is the device count, tensor parallelism inside a node
// (with and without sequence parallelism); every micro-batch count (at least pp when
// pipelined); every schedule: 1F1B, GPipe, ZB-H1 and interleaved 1F1B with each chunk count
// (micro-batches a multiple of pp); ZeRO-1 with dp > 1 and each recomputation mode, unless
// `base` gives zero= or recompute=. Micro-batch counts ascend within each family (the screens
// rely on it). Each is `base` (its fields other than these) with these set, as if written.
// InvalidArgumentError when neither a batch nor max_mb bounds the micro-batches.
std::vector<parallel::Strategy> EnumerateCandidates(const CandidateSpace& space);

// What the tuner reads of the model: the batch and layers its candidates divide, whether it is
// an LLM (a decoder), and its attention: fused or not, and whether the user chose it.
struct TunedModel {
  int64_t batch = 0;
  int64_t layers = 0;
  bool decoder = false;
  bool fused_attention = false;
  bool attention_given = false;
  // Whether the strategy's recompute= changes its graph (a Python graph's recomputation is
  // its modules' own, marked where it is built).
  bool recomputes = true;
};

// Fits `space` to `model`: its batch and layers, the recomputation modes that change its graph
// (selective too where attention is unfused). An LLM on GPUs is tuned as 2025 runs train: in
// bf16 unless `space.base` gives a precision, and with fused attention unless the user chose
// (then `model.fused_attention` becomes true, and each candidate is to be built so). Returns a
// line for each such default, for the front end to print.
std::vector<std::string> FitSpaceToModel(CandidateSpace& space, TunedModel& model, bool gpu);

// The options every candidate keeps (`--with`, tw.tune's options=) as a strategy whose given
// fields say which; empty: none. InvalidArgumentError for what the tuner varies itself
// (degrees, mb, vp, schedule, sp, auto).
parallel::Strategy ParseTuneOptions(const std::string& text);

}  // namespace twinflow::planner
