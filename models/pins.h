#pragma once
// The layouts a Megatron-style strategy pins, on a stage placement with hierarchy [dp, tp]:
// data split on the batch over dp; column-parallel weights split on their output features
// over tp, row-parallel ones on their input features; everything else replicated. Under
// "auto" nothing is pinned.
#include "engine/graph/graph_builder.h"
#include "models/strategy.h"

namespace twinflow::models {

enum class WeightRole {
  kReplicated,     // layer norm scales, biases after a row-parallel matmul, position table
  kColumn,         // [in, out] split on out; its bias [out] split too
  kColumnBias,
  kRow,            // [in, out] split on in
  kVocabulary,     // an embedding table [vocab, hidden] split on the vocabulary
};

void PinData(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId data);
void PinWeight(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId weight,
               WeightRole role);

}  // namespace twinflow::models
