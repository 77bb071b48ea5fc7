#include "planner/memory_floor.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/compiler/pipeline_schedule.h"
#include "engine/compiler/rates.h"
#include "engine/graph/nd_signature_cache.h"
#include "engine/sbp/slicing.h"

namespace twinflow::planner {
namespace {

void AddVariables(const graph::LogicalGraph& graph, const graph::OpNode& op,
                  std::map<sbp::DeviceId, int64_t>& bytes) {
  const sbp::Placement& placement = op.placement;
  for (const graph::TensorId t : op.outputs) {
    const graph::TensorNode& node = graph.tensor(t);
    const int64_t size = DTypeSize(node.meta.dtype);
    const bool pinned = node.pin && node.pin->free_axes.empty();
    for (int64_t d = 0; d < placement.size(); ++d) {
      const int64_t elements =
          pinned ? sbp::PhysicalShape(node.meta.shape, {placement, node.pin->layout}, d).numel()
                 : node.meta.shape.numel() / placement.size();
      bytes[placement.device(d)] += elements * size;
    }
  }
}

std::vector<sbp::DeviceId> DevicesOf(const sbp::Placement& placement) {
  std::vector<sbp::DeviceId> devices;
  for (int64_t d = 0; d < placement.size(); ++d) devices.push_back(placement.device(d));
  return devices;
}

// Whether a backward op on the same devices as `op` reads `tensor`.
bool KeptForBackward(const graph::LogicalGraph& graph, const graph::OpNode& op,
                     graph::TensorId tensor, const std::vector<std::vector<graph::OpId>>& readers) {
  for (const graph::OpId r : readers[tensor]) {
    const graph::OpNode& reader = graph.op(r);
    if (graph.IsBackward(r) && reader.placement.device_ids() == op.placement.device_ids()) {
      return true;
    }
  }
  return false;
}

double Bytes(const graph::TensorMeta& meta) {
  return static_cast<double>(meta.shape.numel() * DTypeSize(meta.dtype));
}

// Union-find root of op `op` among the recomputed ops (`parent` by op id).
graph::OpId Root(std::vector<graph::OpId>& parent, graph::OpId op) {
  while (parent[op] != op) op = parent[op] = parent[parent[op]];
  return op;
}

// By devices: the most bytes the backward pass reads from one recomputed segment (of one
// micro-batch). A segment's recomputed ops read each other's outputs and no other segment's
// (its inputs come through gates), so the segments are the connected parts of the recomputed
// ops; all its outputs the backward reads are live when its first backward op runs.
std::map<std::vector<sbp::DeviceId>, double> LargestRecomputedSegments(
    const graph::LogicalGraph& graph, const std::vector<std::vector<graph::OpId>>& readers) {
  std::vector<graph::OpId> parent(graph.ops().size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<graph::OpId>(i);
  for (const graph::OpNode& op : graph.ops()) {
    if (!op.recomputed) continue;
    for (const graph::TensorId t : op.inputs) {
      const graph::OpId producer = graph.tensor(t).producer;
      if (graph.op(producer).recomputed) parent[Root(parent, op.id)] = Root(parent, producer);
    }
  }
  std::map<std::pair<graph::OpId, std::vector<sbp::DeviceId>>, double> segments;
  for (const graph::OpNode& op : graph.ops()) {
    if (!op.recomputed) continue;
    for (const graph::TensorId t : op.outputs) {
      bool read = false;
      for (const graph::OpId r : readers[t]) {
        read = read || (!graph.op(r).recomputed &&
                        graph.op(r).placement.device_ids() == op.placement.device_ids());
      }
      if (read)
        segments[{Root(parent, op.id), DevicesOf(op.placement)}] += Bytes(graph.tensor(t).meta);
    }
  }
  std::map<std::vector<sbp::DeviceId>, double> largest;
  for (const auto& [key, bytes] : segments)
    largest[key.second] = std::max(largest[key.second], bytes);
  return largest;
}

// Whether every consumer of `input` on `op`'s placement reads it as pinned (a binding pin, or a
// pinned variable's: graph/logical_graph.h). A pin an optimizer update may read in shards
// binds nothing here (it never does for the ops asked about).
bool ReadAsPinned(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                  const graph::OpNode& op, const graph::TensorNode& input) {
  if (!input.pin || input.pin->update_reads_shards) return false;
  const graph::OpNode& producer = graph.op(input.producer);
  if (!(producer.placement == op.placement)) return false;
  return input.pin->binds_consumers ||
         registry.Find(producer.type).role == graph::OpRole::kVariable;
}

// How many times at least the slices of `op`'s output `index` add up to its bytes: the sizes
// of the mesh axes on which no signature the search may give `op` (its inputs read as their
// binding pins, its output as its own pin) writes that output split. A weight gradient made
// from the batch split over dp, which every reader is bound to read so (models/pins.h), comes
// out partial over dp: whole on each replica, Megatron's main_grad.
double ForcedCopies(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                    graph::NdSignatureCache& signatures, const graph::OpNode& op, int index) {
  std::vector<graph::TensorMeta> metas;
  for (const graph::TensorId t : op.inputs) metas.push_back(graph.tensor(t).meta);
  const Shape& mesh = op.placement.hierarchy();
  const graph::TensorNode& output = graph.tensor(op.outputs[index]);
  std::vector<bool> split(mesh.rank(), false);  // by axis: some allowed signature splits it
  bool any = false;
  for (const graph::NdSbpSignature& sig :
       signatures.Get(registry.Find(op.type), graph::OpContext{op.type, op.attrs, metas}, mesh)) {
    bool allowed = !output.pin || output.pin->Allows(sig.outputs[index], mesh);
    for (size_t i = 0; i < op.inputs.size() && allowed; ++i) {
      const graph::TensorNode& input = graph.tensor(op.inputs[i]);
      if (ReadAsPinned(graph, registry, op, input)) {
        allowed = input.pin->Allows(sig.inputs[i], mesh);
      }
    }
    if (!allowed) continue;
    any = true;
    for (int a = 0; a < mesh.rank(); ++a) split[a] = split[a] || sig.outputs[index][a].is_split();
  }
  if (!any) return 1;  // the search finds nothing either, and says why
  double copies = 1;
  for (int a = 0; a < mesh.rank(); ++a) {
    if (!split[a]) copies *= static_cast<double>(mesh[a]);
  }
  return copies;
}

// By devices: the bytes of the per-micro-batch tensors once-a-step ops read, each once (one
// ACC serves all its step-rate readers: compiler/lower_inputs.cc), in as many copies as the
// layouts their producers may write force.
std::map<std::vector<sbp::DeviceId>, double> Accumulated(const graph::LogicalGraph& graph,
                                                         const graph::OpRegistry& registry,
                                                         const std::vector<compiler::Rate>& rates,
                                                         graph::NdSignatureCache& signatures) {
  std::vector<bool> counted(graph.tensors().size(), false);
  std::map<std::vector<sbp::DeviceId>, double> accumulated;
  for (const graph::OpNode& op : graph.ops()) {
    if (rates[op.id] != compiler::Rate::kStep) continue;
    for (const graph::TensorId t : op.inputs) {
      const graph::OpNode& producer = graph.op(graph.tensor(t).producer);
      if (counted[t] || rates[producer.id] != compiler::Rate::kMicroBatch) continue;
      counted[t] = true;
      const double copies =
          ForcedCopies(graph, registry, signatures, producer, graph.tensor(t).output_index);
      accumulated[DevicesOf(producer.placement)] += Bytes(graph.tensor(t).meta) * copies;
    }
  }
  return accumulated;
}

}  // namespace

MemoryProfile ProfileMemory(const models::BuiltModel& model, const graph::OpRegistry& registry) {
  const graph::LogicalGraph& graph = model.graph;
  const std::vector<compiler::Rate> rates = compiler::OpRates(graph, registry);
  std::vector<std::vector<graph::OpId>> readers(graph.tensors().size());
  for (const graph::OpNode& op : graph.ops()) {
    for (const graph::TensorId t : op.inputs) readers[t].push_back(op.id);
  }
  graph::NdSignatureCache signatures;
  MemoryProfile profile;
  std::map<std::pair<std::vector<sbp::DeviceId>, int32_t>, double> kept;
  for (const graph::OpNode& op : graph.ops()) {
    if (registry.Find(op.type).role == graph::OpRole::kVariable) {
      AddVariables(graph, op, profile.variable_bytes);
      continue;
    }
    if (graph.IsBackward(op.id) || rates[op.id] != compiler::Rate::kMicroBatch) continue;
    for (const graph::TensorId t : op.outputs) {
      if (!KeptForBackward(graph, op, t, readers)) continue;
      const graph::TensorNode& node = graph.tensor(t);
      kept[{DevicesOf(op.placement), op.stage}] +=
          Bytes(node.meta) * ForcedCopies(graph, registry, signatures, op, node.output_index);
    }
  }
  for (const auto& [where, bytes] : kept)
    profile.kept.push_back({where.first, where.second, bytes});
  profile.accumulated = Accumulated(graph, registry, rates, signatures);
  profile.recomputed = LargestRecomputedSegments(graph, readers);
  profile.micro_batches = model.strategy.micro_batches;
  return profile;
}

namespace {

// The slots a kept activation of `stage` has: the micro-batches its rank runs ahead there.
double KeptSlots(int32_t stage, const parallel::Strategy& strategy) {
  const int ranks = static_cast<int>(std::max<int64_t>(1, strategy.pp));
  const std::vector<int64_t> ahead = compiler::MicroBatchesAhead(
      strategy.schedule, ranks, static_cast<int>(strategy.virtual_stages), strategy.micro_batches,
      stage % ranks);
  const auto chunk = std::min(static_cast<size_t>(stage / ranks), ahead.size() - 1);
  return static_cast<double>(ahead[chunk]);
}

}  // namespace

int64_t MemoryFloor(const MemoryProfile& profile, const parallel::Strategy& strategy) {
  double floor = 0;
  for (const auto& entry : profile.variable_bytes) {
    floor = std::max(floor, static_cast<double>(entry.second));
  }
  // By the devices of a stage: each device's average share of its kept slots.
  const double scale =
      strategy.micro_batches >= profile.micro_batches
          ? static_cast<double>(profile.micro_batches) / static_cast<double>(strategy.micro_batches)
          : 0.0;
  std::map<std::vector<sbp::DeviceId>, double> kept;
  for (const MemoryProfile::Kept& k : profile.kept) {
    kept[k.devices] +=
        KeptSlots(k.stage, strategy) * k.bytes * scale / static_cast<double>(k.devices.size());
  }
  for (const auto& [devices, bytes] : profile.recomputed) {
    kept[devices] += bytes * scale / static_cast<double>(devices.size());
  }
  if (strategy.micro_batches > 1) {
    for (const auto& [devices, bytes] : profile.accumulated) {
      kept[devices] += bytes / static_cast<double>(devices.size());
    }
  }
  for (const auto& [devices, bytes] : kept) {
    double variables = 0;
    for (const sbp::DeviceId& d : devices) {
      const auto found = profile.variable_bytes.find(d);
      if (found != profile.variable_bytes.end()) variables += static_cast<double>(found->second);
    }
    floor = std::max(floor, variables / static_cast<double>(devices.size()) + bytes);
  }
  return static_cast<int64_t>(floor);
}

int64_t VariableBytesFloor(const models::BuiltModel& model, const graph::OpRegistry& registry) {
  parallel::Strategy variables_only;
  const MemoryProfile profile = ProfileMemory(model, registry);
  MemoryProfile variables;
  variables.variable_bytes = profile.variable_bytes;
  return MemoryFloor(variables, variables_only);
}

}  // namespace twinflow::planner
