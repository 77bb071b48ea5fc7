#include "models/pins.h"

namespace twinflow::models {

using sbp::NdSbp;
using sbp::Sbp;

void PinData(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId data) {
  if (strategy.automatic) return;
  builder.Pin(data, NdSbp({Sbp::Split(0), Sbp::Broadcast()}));
}

void PinWeight(graph::GraphBuilder& builder, const Strategy& strategy, graph::TensorId weight,
               WeightRole role) {
  if (strategy.automatic) return;
  Sbp tp_axis = Sbp::Broadcast();
  switch (role) {
    case WeightRole::kReplicated: break;
    case WeightRole::kColumn: tp_axis = Sbp::Split(1); break;
    case WeightRole::kColumnBias:
    case WeightRole::kRow:
    case WeightRole::kVocabulary: tp_axis = Sbp::Split(0); break;
  }
  builder.Pin(weight, NdSbp({Sbp::Broadcast(), tp_axis}));
}

}  // namespace twinflow::models
