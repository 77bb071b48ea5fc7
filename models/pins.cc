#include "models/pins.h"

#include <algorithm>
#include <optional>

#include "engine/core/error.h"
#include "engine/graph/nd_signature_cache.h"
#include "engine/graph/op_def.h"
#include "engine/graph/op_registry.h"

namespace twinflow::models {

using sbp::NdSbp;
using sbp::Sbp;

void PinData(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
             graph::TensorId data) {
  if (strategy.automatic) return;
  builder.Pin(data, NdSbp({Sbp::Split(0), Sbp::Broadcast()}), strategy.SearchedAxes());
}

void PinActivation(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                   graph::TensorId x) {
  if (strategy.automatic || !strategy.sequence_parallel) return PinData(builder, strategy, x);
  // Sequence parallelism splits the tokens over tp as the linear layers' flattened
  // [batch * sequence] axis holds them, so that a row-parallel sum reduce-scatters straight into
  // the split: by the replica's batch rows where they divide over tp (whole sequences, a
  // contiguous block of tokens), else (Megatron's usual micro-batch of one sequence) by the
  // sequence, which is then contiguous too.
  const Shape& shape = builder.meta(x).shape;
  const int64_t rows = shape[0] / std::max<int64_t>(strategy.dp, 1);
  const int axis = rows % strategy.tp == 0 || shape.rank() < 3 ? 0 : 1;
  if (shape[axis] % (axis == 0 ? strategy.dp * strategy.tp : strategy.tp) != 0) {
    return PinData(builder, strategy, x);  // nothing to split evenly: as without sp
  }
  builder.Pin(x, NdSbp({Sbp::Split(0), Sbp::Split(axis)}), strategy.SearchedAxes());
}

void PinClassSplitLogits(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                         graph::TensorId logits) {
  if (strategy.automatic) return;
  builder.Pin(logits, NdSbp({Sbp::Split(0), Sbp::Split(1)}), strategy.SearchedAxes(),
              /*binds_consumers=*/true);
}

namespace {

// Whether output `o` of `op` carries the batch on its axis 0: some 1-D signature (on the
// data-parallel degree) splits it there exactly when it so splits an input that carries the
// batch. A reshape that merges the batch into axis 0 does; a causal mask computed from the
// scores, or a reduction over the batch, does not.
bool CarriesBatch(const std::vector<graph::SbpSignature>& sigs, const graph::OpNode& op, size_t o,
                  const std::vector<bool>& batch) {
  const Sbp split = Sbp::Split(0);
  return std::any_of(sigs.begin(), sigs.end(), [&](const graph::SbpSignature& sig) {
    if (!(sig.outputs[o] == split)) return false;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (batch[op.inputs[i]] && sig.inputs[i] == split) return true;
    }
    return false;
  });
}

std::vector<graph::TensorMeta> MetasOf(const graph::LogicalGraph& graph, const graph::OpNode& op) {
  std::vector<graph::TensorMeta> metas;
  for (graph::TensorId t : op.inputs) metas.push_back(graph.tensor(t).meta);
  return metas;
}

// Whether every reader of `tensor` has a signature (in `nd`, by op id) reading it as `pin`
// allows (a reshape that splits the batch out of a merged axis may not: it then stays free to
// box it).
bool EveryReaderCanRead(const graph::LogicalGraph& graph, graph::TensorId tensor,
                        const std::vector<graph::OpId>& readers,
                        const std::vector<const std::vector<graph::NdSbpSignature>*>& nd,
                        const graph::TensorPin& pin) {
  return std::all_of(readers.begin(), readers.end(), [&](graph::OpId id) {
    const graph::OpNode& reader = graph.op(id);
    return std::any_of(nd[id]->begin(), nd[id]->end(), [&](const graph::NdSbpSignature& sig) {
      for (size_t i = 0; i < reader.inputs.size(); ++i) {
        if (reader.inputs[i] == tensor && !pin.Allows(sig.inputs[i], reader.placement.hierarchy()))
          return false;
      }
      return true;
    });
  });
}

}  // namespace

void PinBatchSplit(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
                   bool bind_consumers) {
  if (strategy.automatic || strategy.dp == 1 ||
      strategy.dp_source == parallel::DegreeSource::kSearched) {
    return;
  }
  const graph::LogicalGraph& graph = builder.graph();
  const graph::TensorPin split{NdSbp({Sbp::Split(0), Sbp::Broadcast()}), {1}};
  graph::TensorPin binding = split;
  binding.binds_consumers = true;
  std::vector<std::vector<graph::OpId>> readers(graph.tensors().size());
  // By op id, into `signatures` (copying them was most of a large model's build).
  std::vector<const std::vector<graph::NdSbpSignature>*> nd(graph.ops().size());
  graph::NdSignatureCache signatures;
  for (const graph::OpNode& op : graph.ops()) {
    for (graph::TensorId t : op.inputs) readers[t].push_back(op.id);
    const graph::OpDef& def = builder.registry().Find(op.type);
    if (def.is_source()) continue;
    const std::vector<graph::TensorMeta> metas = MetasOf(graph, op);
    nd[op.id] = &signatures.Get(def, {op.type, op.attrs, metas}, op.placement.hierarchy());
  }
  std::vector<bool> batch(graph.tensors().size(), false);  // axis 0 is the batch
  for (const graph::OpNode& op : graph.ops()) {            // creation order is a topological order
    const graph::OpDef& def = builder.registry().Find(op.type);
    if (def.role == graph::OpRole::kInput) {
      for (graph::TensorId t : op.outputs) batch[t] = true;
      continue;
    }
    if (def.is_source()) continue;
    const std::vector<graph::TensorMeta> metas = MetasOf(graph, op);
    const std::vector<graph::SbpSignature> axis_sigs =
        def.signatures(graph::OpContext{op.type, op.attrs, metas}, strategy.dp);
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const graph::TensorNode& node = graph.tensor(op.outputs[o]);
      if (node.meta.shape.rank() == 0) continue;
      batch[op.outputs[o]] = CarriesBatch(axis_sigs, op, o, batch);
      if (node.pin || !batch[op.outputs[o]]) continue;
      // Only where the op can write it: a reshape that merges the batch axis may split it over
      // the whole mesh only (OpDef::signatures_need_whole_mesh), and then the search decides.
      const bool writable = std::any_of(nd[op.id]->begin(), nd[op.id]->end(), [&](const auto& sig) {
        return split.Allows(sig.outputs[o], op.placement.hierarchy());
      });
      if (!writable) continue;
      const graph::TensorId t = op.outputs[o];
      const bool bind = bind_consumers && EveryReaderCanRead(graph, t, readers[t], nd, binding);
      builder.Pin(t, bind ? binding : split);
    }
  }
}

sbp::NdSbp WeightLayout(WeightRole role) {
  Sbp tp_axis = Sbp::Broadcast();
  switch (role) {
    case WeightRole::kReplicated:
      break;
    case WeightRole::kColumn:
      tp_axis = Sbp::Split(1);
      break;
    case WeightRole::kColumnBias:
    case WeightRole::kRow:
    case WeightRole::kVocabulary:
      tp_axis = Sbp::Split(0);
      break;
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

void PinWeight(graph::GraphBuilder& builder, const parallel::Strategy& strategy,
               graph::TensorId weight, WeightRole role) {
  if (strategy.automatic) return;
  builder.Pin(weight, WeightLayout(role), strategy.SearchedAxes());
}

void PinWideGradientSums(graph::GraphBuilder& builder, const parallel::Strategy& strategy) {
  if (strategy.automatic || strategy.dp == 1 ||
      strategy.dp_source == parallel::DegreeSource::kSearched || !strategy.Autocast() ||
      strategy.grad_reduce != DType::kF32) {
    return;
  }
  graph::TensorPin partial{NdSbp({Sbp::Partial(), Sbp::Broadcast()}), {1}};
  partial.binds_consumers = true;
  const graph::LogicalGraph& graph = builder.graph();
  for (const graph::OpNode& op : graph.ops()) {
    if (op.type != "cast" || !op.attrs.GetBool("sum_wide", false)) continue;
    const graph::TensorId narrow = op.inputs[0];
    if (!graph.tensor(narrow).pin) builder.Pin(narrow, partial);
  }
}

namespace {

// The dp-axis split for a tensor of `shape` whose tp axis is laid out `tp`: the first axis tp
// leaves whole with at least dp elements; nullopt when there is none (a scalar, or a vector tp
// splits, such as a column-parallel bias: splitting its axis over dp first would not be a
// slice of its tp part, so sharding it would move data for a few bytes).
std::optional<Sbp> ShardAxis(const Shape& shape, const Sbp& tp,
                             const parallel::Strategy& strategy) {
  for (int k = 0; k < shape.rank(); ++k) {
    if (!(tp.is_split() && tp.axis == k) && shape[k] >= strategy.dp) return Sbp::Split(k);
  }
  return std::nullopt;
}

}  // namespace

void PinShardedOptimizerState(graph::GraphBuilder& builder, const parallel::Strategy& strategy) {
  if (strategy.automatic || strategy.zero == parallel::ZeroStage::kNone || strategy.dp == 1 ||
      strategy.dp_source == parallel::DegreeSource::kSearched) {
    return;
  }
  const graph::LogicalGraph& graph = builder.graph();
  for (const graph::OpNode& op : graph.ops()) {
    if (builder.registry().Find(op.type).role != graph::OpRole::kOptimizerUpdate) continue;
    const graph::TensorNode& param = graph.tensor(op.inputs[0]);
    if (param.pin && !param.pin->update_reads_shards) {
      graph::TensorPin readable = *param.pin;
      readable.update_reads_shards = true;
      builder.Pin(param.id, readable);
    }
    for (size_t i = 1; i < op.inputs.size(); ++i) {
      const graph::TensorNode& state = graph.tensor(op.inputs[i]);
      const bool is_state =
          state.meta == param.meta && state.producer >= 0 &&
          builder.registry().Find(graph.op(state.producer).type).role == graph::OpRole::kVariable;
      if (!is_state || !state.pin || state.pin->layout.size() != 2) continue;
      const std::optional<Sbp> shard = ShardAxis(state.meta.shape, state.pin->layout[1], strategy);
      if (!shard) continue;
      graph::TensorPin pin = *state.pin;
      pin.layout[0] = *shard;
      builder.Pin(state.id, pin);
    }
  }
}

}  // namespace twinflow::models
