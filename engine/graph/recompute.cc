#include "engine/graph/recompute.h"

#include "engine/core/error.h"

namespace twinflow::graph {
namespace {

bool FromSource(const GraphBuilder& builder, TensorId t) {
  const OpId producer = builder.graph().tensor(t).producer;
  return producer >= 0 && builder.registry().Find(builder.graph().op(producer).type).is_source();
}

void CopyPin(GraphBuilder& builder, TensorId from, TensorId to) {
  if (const auto& pin = builder.graph().tensor(from).pin) builder.Pin(to, *pin);
}

}  // namespace

Recomputation::Recomputation(const GraphBuilder& builder,
                             const std::vector<std::vector<OpId>>& segments,
                             const std::vector<OpId>& order, const std::set<std::string>* keep)
    : segments_(segments.size()),
      segment_of_(builder.graph().ops().size(), -1),
      keep_(keep),
      recomputed_(segments.size()),
      done_(segments.size(), false) {
  const LogicalGraph& graph = builder.graph();
  for (size_t k = 0; k < segments.size(); ++k) {
    for (OpId id : segments[k]) {
      if (id < 0 || id >= static_cast<OpId>(graph.ops().size())) {
        throw InvalidArgumentError("autograd: recompute segment " + std::to_string(k) +
                                   " names op id " + std::to_string(id) + ", not in the graph");
      }
      const OpNode& op = graph.op(id);
      if (builder.registry().Find(op.type).is_source() || segment_of_[id] >= 0) {
        throw InvalidArgumentError(
            "autograd: op '" + op.name + "' cannot be recomputed in segment " + std::to_string(k) +
            (segment_of_[id] >= 0 ? " (it is in another)" : " (a source op)"));
      }
      segment_of_[id] = static_cast<int>(k);
    }
  }
  for (OpId id : order) {
    if (segment_of_[id] >= 0) segments_[segment_of_[id]].push_back(id);
  }
}

OpNode Recomputation::Reads(GraphBuilder& builder, const OpNode& op,
                            const std::vector<std::optional<TensorId>>& dy) {
  const int k = op.id < static_cast<OpId>(segment_of_.size()) ? segment_of_[op.id] : -1;
  if (k < 0) return op;
  if (!done_[k]) {
    TensorId after = -1;
    for (const auto& d : dy) after = after >= 0 || !d ? after : *d;
    const GraphBuilder::Site site = builder.site();
    Emit(builder, k, after);
    builder.SetSite(site);
    done_[k] = true;
  }
  OpNode reads = op;
  for (auto* ids : {&reads.inputs, &reads.outputs}) {
    for (TensorId& t : *ids) {
      if (const auto found = recomputed_[k].find(t); found != recomputed_[k].end())
        t = found->second;
    }
  }
  return reads;
}

void Recomputation::Emit(GraphBuilder& builder, int segment, TensorId after) {
  std::map<TensorId, TensorId>& recomputed = recomputed_[segment];
  std::set<TensorId> inside;
  for (OpId id : segments_[segment]) {
    for (TensorId t : builder.graph().op(id).outputs) inside.insert(t);
  }
  std::map<TensorId, TensorId> gated;
  for (OpId id : segments_[segment]) {
    const OpNode op = builder.graph().op(id);  // a copy: adding ops may move the graph's storage
    if (keep_ && !keep_->count(op.name + "/recompute")) continue;
    builder.PlaceLike(op);
    // Inputs computed outside the segment are gated; weights and data only where the op has
    // nothing else to wait for (few gates: each is a copy and a choice for the SBP search).
    bool waits = false;
    for (TensorId t : op.inputs) waits = waits || inside.count(t) || !FromSource(builder, t);
    std::vector<TensorId> inputs;
    for (TensorId t : op.inputs) {
      if (inside.count(t)) {
        inputs.push_back(recomputed.at(t));
      } else if (waits && FromSource(builder, t)) {
        inputs.push_back(t);
      } else {
        auto found = gated.find(t);
        if (found == gated.end()) {
          const TensorId g =
              builder.Add1("recompute_gate", {t, after}, {},
                           op.name + "/recompute_gate" + std::to_string(gated.size()));
          CopyPin(builder, t, g);
          found = gated.emplace(t, g).first;
        }
        inputs.push_back(found->second);
      }
    }
    const std::vector<TensorId> outputs =
        builder.Add(op.type, inputs, op.attrs, op.name + "/recompute");
    const OpId copy = builder.graph().tensor(outputs[0]).producer;
    builder.graph().MarkRecomputed(copy);
    emitted_.push_back(copy);
    for (size_t i = 0; i < outputs.size(); ++i) {
      recomputed[op.outputs[i]] = outputs[i];
      CopyPin(builder, op.outputs[i], outputs[i]);
    }
  }
  // The segment's gradients read its inputs through the gates too: they keep the gated copies
  // alive instead of the originals.
  for (const auto& [t, g] : gated) recomputed[t] = g;
}

std::set<std::string> ReadRecomputations(const LogicalGraph& graph,
                                         const std::vector<OpId>& emitted) {
  const std::set<OpId> recomputed(emitted.begin(), emitted.end());
  std::set<OpId> read;
  for (auto it = emitted.rbegin(); it != emitted.rend(); ++it) {  // readers come later
    for (TensorId t : graph.op(*it).outputs) {
      for (OpId reader : graph.Consumers(t)) {
        if (!recomputed.count(reader) || read.count(reader)) read.insert(*it);
      }
    }
  }
  std::set<std::string> names;
  for (OpId id : read) names.insert(graph.op(id).name);
  return names;
}

}  // namespace twinflow::graph
