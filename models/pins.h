#pragma once
// The layouts a Megatron-style strategy pins, on a stage placement with hierarchy [dp, tp]:
// data split on the batch over dp; column-parallel weights split on their output features
// over tp, row-parallel ones on their input features; everything else replicated; and the
// residual stream between blocks whole on every tp member, split on the batch over dp. A
// pinned weight is read as pinned by every consumer (graph/logical_graph.h), so
// tensor parallelism never gathers a weight, and each column/row pair costs the one
// all-reduce Megatron pays. Under "auto" nothing is pinned; a degree written `auto` leaves
// its mesh axis unpinned (Strategy::SearchedAxes).
#include <string>

#include "engine/graph/graph_builder.h"
#include "engine/parallel/strategy.h"

namespace twinflow::models {

enum class WeightRole {
  kReplicated,  // layer norm scales, biases after a row-parallel matmul, position table
  kColumn,      // [in, out] split on out; its bias [out] split too
  kColumnBias,
  kRow,         // [in, out] split on in
  kVocabulary,  // an embedding table [vocab, hidden] split on the vocabulary
};

// The layout of a weight of `role` on a [dp, tp] stage: replicated over dp; over tp split as
// the role says. The one table of Megatron's weight layouts (Python's nn layers use it too).
sbp::NdSbp WeightLayout(WeightRole role);
// "column", "column_bias", "row", "vocabulary" (also "vocab"), "replicated"; InvalidArgumentError
// otherwise.
WeightRole ParseWeightRole(const std::string& name);

void PinData(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
             graph::TensorId data);
// An activation of the residual stream [batch, sequence, hidden] (a block's output, the
// embedding's): (S(0),B), as Megatron keeps it without sequence parallelism, or under sp its
// tokens split over tp (the replica's batch rows, (S(0),S(0)), where they divide over tp; else
// the sequence, (S(0),S(1))); the search then reduce-scatters into it and all-gathers out of it
// where the tensor-parallel regions end and begin.
void PinActivation(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                   graph::TensorId x);
// dp's layout for the whole forward pass: every tensor that carries the batch on its axis 0
// (from the data, through ops that keep the batch split; not a causal mask made from the
// scores) and is not pinned already is split on its batch axis (axis 0, batch-major as the models
// write them) over the dp mesh axis, its tp axis left to the search. Without it the search may
// replicate a block over dp to spare its weight gradients' all-reduce, which is not data
// parallelism. No-op under auto, dp=1 or dp=auto. Call once the forward graph is written.
// With `bind_consumers` (the backward pass) every reader on the placement reads such a tensor
// split too, so a weight's gradient comes out partial over dp and is all-reduced.
void PinBatchSplit(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                   bool bind_consumers = false);
// Logits [tokens, classes] of a column-parallel head: (S(0),S(1)), read so by every consumer,
// so the class-split loss reduces over tp (Megatron's vocabulary-parallel cross entropy)
// instead of gathering the logits.
void PinClassSplitLogits(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                         graph::TensorId logits);
// Mixed precision with grad_reduce=fp32: each weight gradient in the low type is read partial
// over dp by the cast that widens it (a narrowing cast's gradient, attr sum_wide), so the sum
// over dp is taken in fp32, after the micro-batches' accumulation, not in the low type. Call
// after the backward pass is written. No-op otherwise, or under auto, dp=1 or dp=auto.
void PinWideGradientSums(graph::GraphBuilder& builder, const parallel::Strategy& strategy);
// ZeRO stage 1 (strategy zero=1): every optimizer-state variable (an update's input other than
// the parameter, made by a variable op with the parameter's shape: momentum, Adam moments) is
// pinned split over dp on an axis tp leaves whole, keeping its tp layout; the update then
// reads the parameter as the same slice (the SBP search lets an optimizer update read a pinned
// variable's B axis split, which moves no data), so the gradient is reduce-scattered into the
// shards and the assign all-gathers the new value. State too small to split stays whole. Call
// after the optimizer is written. No-op otherwise, or under auto, dp=1 or dp=auto.
void PinShardedOptimizerState(graph::GraphBuilder& builder, const parallel::Strategy& strategy);
void PinWeight(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
               graph::TensorId weight, WeightRole role);

}  // namespace twinflow::models
