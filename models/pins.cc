#include "models/pins.h"

#include "engine/core/error.h"

namespace twinflow::models {

using sbp::NdSbp;
using sbp::Sbp;

void PinData(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId data) {
  if (strategy.automatic) return;
  builder.Pin(data, NdSbp({Sbp::Split(0), Sbp::Broadcast()}), strategy.SearchedAxes());
}

void PinActivation(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId x) {
  PinData(builder, strategy, x);
}

void PinClassSplitLogits(graph::GraphBuilder& builder, const Strategy& strategy,
                         graph::TensorId logits) {
  if (strategy.automatic) return;
  builder.Pin(logits, NdSbp({Sbp::Split(0), Sbp::Split(1)}), strategy.SearchedAxes(),
              /*binds_consumers=*/true);
}

sbp::NdSbp WeightLayout(WeightRole role) {
  Sbp tp_axis = Sbp::Broadcast();
  switch (role) {
    case WeightRole::kReplicated: break;
    case WeightRole::kColumn: tp_axis = Sbp::Split(1); break;
    case WeightRole::kColumnBias:
    case WeightRole::kRow:
    case WeightRole::kVocabulary: tp_axis = Sbp::Split(0); break;
  }
  return NdSbp({Sbp::Broadcast(), tp_axis});
}

WeightRole ParseWeightRole(const std::string& name) {
  if (name == "column") return WeightRole::kColumn;
  if (name == "column_bias") return WeightRole::kColumnBias;
  if (name == "row") return WeightRole::kRow;
  if (name == "vocabulary" || name == "vocab") return WeightRole::kVocabulary;
  if (name == "replicated") return WeightRole::kReplicated;
  throw InvalidArgumentError("unknown weight role '" + name +
                             "' (expected column, column_bias, row, vocabulary or replicated)");
}

void PinWeight(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId weight,
               WeightRole role) {
  if (strategy.automatic) return;
  builder.Pin(weight, WeightLayout(role), strategy.SearchedAxes());
}

}  // namespace twinflow::models
