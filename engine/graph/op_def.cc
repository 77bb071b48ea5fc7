#include "engine/graph/op_def.h"

#include <algorithm>
#include <set>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::graph {

bool UpdatesState(OpRole role) {
  return role == OpRole::kAssign || role == OpRole::kOptimizerUpdate ||
         role == OpRole::kStepIncrement;
}

namespace {

template <typename T>
std::string Join(const std::vector<T>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ",";
    s += items[i].ToString();
  }
  return s;
}

std::string Arrow(const std::string& inputs, const std::string& outputs) {
  return inputs.empty() ? "-> " + outputs : inputs + " -> " + outputs;
}

bool AllBroadcast(const SbpSignature& sig) {
  const auto b = [](const sbp::Sbp& s) { return s.is_broadcast(); };
  return std::all_of(sig.inputs.begin(), sig.inputs.end(), b) &&
         std::all_of(sig.outputs.begin(), sig.outputs.end(), b);
}

// True when no tensor axis is split, over all mesh axes together, into more parts than it has
// elements, nor into parts that are not whole multiples of the op's split granule (heads).
// Tensors without a known meta (null) are not checked. Throws SbpError when a signature splits
// an axis the tensor lacks (an op bug).
bool FitsShapes(const OpDef& def, const OpContext& ctx, const std::vector<sbp::NdSbp>& nd_sbps,
                const std::vector<const TensorMeta*>& metas, const Shape& hierarchy) {
  const std::string& type = def.type;
  for (size_t t = 0; t < nd_sbps.size(); ++t) {
    if (metas[t] == nullptr) continue;
    const Shape& shape = metas[t]->shape;
    std::vector<int64_t> parts(shape.rank(), 1);
    for (int a = 0; a < nd_sbps[t].size(); ++a) {
      const sbp::Sbp& s = nd_sbps[t][a];
      if (!s.is_split()) continue;
      if (s.axis < 0 || s.axis >= shape.rank()) {
        throw SbpError("op type '" + type + "' declares " + s.ToString() + " for a tensor of " +
                       metas[t]->ToString());
      }
      parts[s.axis] *= hierarchy[a];
    }
    for (int d = 0; d < shape.rank(); ++d) {
      if (parts[d] > 1 && parts[d] > shape[d]) return false;
      if (parts[d] > 1 && def.split_granule) {
        const int64_t granule = def.split_granule(ctx, static_cast<int>(t), d);
        if (granule > 1 && (shape[d] % granule != 0 || (shape[d] / granule) % parts[d] != 0)) {
          return false;
        }
      }
    }
  }
  return true;
}

// The chains of local_signatures from mesh axis `axis` on, each axis's splits dividing the
// shapes the next one sees (only where they divide evenly), appended to `result` when new.
struct NestedSearch {
  const OpDef& def;
  const Shape& hierarchy;
  size_t num_inputs;
  std::vector<NdSbpSignature>& result;
  std::set<std::pair<std::vector<sbp::NdSbp>, std::vector<sbp::NdSbp>>>& seen;

  void From(int axis, const std::vector<Shape>& shapes, std::vector<sbp::NdSbp>& nd) {
    if (axis == hierarchy.rank()) {
      std::vector<sbp::NdSbp> inputs(nd.begin(), nd.begin() + static_cast<long>(num_inputs));
      std::vector<sbp::NdSbp> outputs(nd.begin() + static_cast<long>(num_inputs), nd.end());
      if (seen.emplace(inputs, outputs).second) result.push_back({inputs, outputs});
      return;
    }
    const std::vector<Shape> in(shapes.begin(), shapes.begin() + static_cast<long>(num_inputs));
    const std::vector<Shape> out(shapes.begin() + static_cast<long>(num_inputs), shapes.end());
    for (const SbpSignature& sig : def.local_signatures(in, out, hierarchy[axis])) {
      std::vector<Shape> next = shapes;
      bool even = true;
      for (size_t t = 0; t < shapes.size(); ++t) {
        const sbp::Sbp& s = t < num_inputs ? sig.inputs[t] : sig.outputs[t - num_inputs];
        nd[t][axis] = s;
        if (!s.is_split()) continue;
        std::vector<int64_t> dims = next[t].dims();
        even = even && dims[s.axis] % hierarchy[axis] == 0;
        dims[s.axis] /= hierarchy[axis];
        next[t] = Shape(dims);
      }
      if (even) From(axis + 1, next, nd);
    }
  }
};

}  // namespace

std::string SbpSignature::ToString() const { return Arrow(Join(inputs), Join(outputs)); }

std::string NdSbpSignature::ToString() const { return Arrow(Join(inputs), Join(outputs)); }

std::vector<NdSbpSignature> NdSignatures(const OpDef& def, const OpContext& ctx,
                                         const Shape& hierarchy) {
  if (!def.signatures) return {};
  const std::vector<TensorMeta> outputs = def.infer ? def.infer(ctx) : std::vector<TensorMeta>();
  const size_t num_inputs = ctx.inputs.size();
  const size_t num_outputs = def.infer ? outputs.size() : static_cast<size_t>(def.num_outputs);
  std::vector<const TensorMeta*> metas;
  for (const TensorMeta& m : ctx.inputs) metas.push_back(&m);
  for (size_t o = 0; o < num_outputs; ++o) {
    metas.push_back(def.infer ? &outputs[o] : nullptr);
  }

  const int rank = hierarchy.rank();
  std::vector<std::vector<SbpSignature>> per_axis(rank);
  for (int a = 0; a < rank; ++a) {
    std::vector<SbpSignature> sigs =
        def.signatures(ctx, def.signatures_need_whole_mesh ? hierarchy.numel() : hierarchy[a]);
    for (const SbpSignature& sig : sigs) {
      if (sig.inputs.size() != num_inputs || sig.outputs.size() != num_outputs) {
        throw InvalidArgumentError("op type '" + def.type + "' declares signature " +
                                   sig.ToString() + " for " + std::to_string(num_inputs) +
                                   " inputs and " + std::to_string(num_outputs) + " outputs");
      }
    }
    // On a mesh axis of one device every Sbp is the same layout; all-B stands for them all.
    if (hierarchy[a] == 1) {
      auto it = std::find_if(sigs.begin(), sigs.end(), AllBroadcast);
      if (it != sigs.end()) sigs = {*it};
    }
    if (sigs.empty()) return {};
    per_axis[a] = std::move(sigs);
  }

  std::vector<NdSbpSignature> result;
  std::set<std::pair<std::vector<sbp::NdSbp>, std::vector<sbp::NdSbp>>> seen;
  std::vector<size_t> pick(rank, 0);  // an odometer over the axes, the last one fastest
  while (true) {
    std::vector<sbp::NdSbp> nd(metas.size(), sbp::NdSbp(std::vector<sbp::Sbp>(rank)));
    for (int a = 0; a < rank; ++a) {
      const SbpSignature& sig = per_axis[a][pick[a]];
      for (size_t i = 0; i < num_inputs; ++i) nd[i][a] = sig.inputs[i];
      for (size_t o = 0; o < num_outputs; ++o) nd[num_inputs + o][a] = sig.outputs[o];
    }
    if (FitsShapes(def, ctx, nd, metas, hierarchy)) {
      NdSbpSignature candidate;
      candidate.inputs.assign(nd.begin(), nd.begin() + num_inputs);
      candidate.outputs.assign(nd.begin() + num_inputs, nd.end());
      if (seen.emplace(candidate.inputs, candidate.outputs).second) {
        result.push_back(std::move(candidate));
      }
    }
    int a = rank - 1;
    while (a >= 0 && ++pick[a] == per_axis[a].size()) pick[a--] = 0;
    if (a < 0) break;
  }
  if (def.local_signatures && rank > 1 && def.infer) {
    std::vector<Shape> shapes;
    for (const TensorMeta* m : metas) shapes.push_back(m->shape);
    std::vector<sbp::NdSbp> nd(metas.size(), sbp::NdSbp(std::vector<sbp::Sbp>(rank)));
    NestedSearch{def, hierarchy, num_inputs, result, seen}.From(0, shapes, nd);
  }
  return result;
}

std::string ParallelismName(const OpDef& def, const OpContext& ctx, const SbpSignature& sig) {
  if (def.parallelism) return def.parallelism(ctx, sig);
  const std::vector<sbp::Sbp>& side = sig.outputs.empty() ? sig.inputs : sig.outputs;
  if (side.empty() || side[0].is_broadcast()) return "replicated";
  if (side[0].is_partial()) return "partial";
  return "split " + side[0].ToString();
}

}  // namespace twinflow::graph
