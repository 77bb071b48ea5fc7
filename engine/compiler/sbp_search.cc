#include "engine/compiler/sbp_search.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "engine/compiler/boxing_pricer.h"
#include "engine/compiler/min_sum_solver.h"
#include "engine/core/error.h"
#include "engine/graph/nd_signature_cache.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/slicing.h"

namespace twinflow::compiler {
namespace {

using graph::NdSbpSignature;
using graph::OpId;
using graph::TensorId;

bool AllAxes(const sbp::NdSbp& nd, const sbp::Sbp& sbp) {
  for (const sbp::Sbp& s : nd.sbps()) {
    if (!(s == sbp)) return false;
  }
  return true;
}

// An assign writes into its variable where the variable lives: its first input cannot be
// re-laid-out (the new value, its second input, is boxed to the variable's layout instead).
constexpr double kForbidden = 1e30;

double EdgeTime(BoxingPricer& pricer, const graph::TensorMeta& meta, const sbp::Layout& src,
                bool written_in_place, const sbp::Layout& dst) {
  if (written_in_place) return src == dst ? 0.0 : kForbidden;
  return pricer.Time(meta, src, dst);
}

// The search as a MinSumProblem: one variable per op, its candidates the op's signatures.
struct SearchModel {
  std::vector<std::vector<NdSbpSignature>> candidates;  // by op id
  std::vector<bool> assigns;                            // by op id: OpRole::kAssign
  MinSumProblem problem;
};

// A pinned variable, or a pin that binds its consumers, is read as pinned by every consumer on
// its placement: the strategy's weights are never re-laid-out (logical_graph.h).
const graph::TensorPin* ReadPin(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                                const graph::OpNode& consumer, TensorId tensor) {
  const graph::TensorNode& node = graph.tensor(tensor);
  if (!node.pin) return nullptr;
  const graph::OpNode& producer = graph.op(node.producer);
  const bool binds =
      node.pin->binds_consumers || registry.Find(producer.type).role == graph::OpRole::kVariable;
  if (!binds || !(producer.placement == consumer.placement)) {
    return nullptr;
  }
  return &*node.pin;
}

// Whether a consumer may read a tensor pinned `pin` as `read`. An optimizer update (`update`)
// may also read a B axis of a pin marked update_reads_shards split, which moves no data: ZeRO's
// sharded update of a replicated parameter (models/pins.h, PinShardedOptimizerState).
bool ReadableAs(const graph::TensorPin& pin, const sbp::NdSbp& read, const Shape& mesh,
                bool update) {
  if (pin.Allows(read, mesh)) return true;
  if (!update || !pin.update_reads_shards) return false;
  graph::TensorPin sliced = pin;
  for (int a = 0; a < sliced.layout.size() && a < read.size(); ++a) {
    if (sliced.layout[a].is_broadcast() && read[a].is_split()) sliced.layout[a] = read[a];
  }
  return sliced.Allows(read, mesh);
}

// Why no candidate is left, for the error: the first pin that removed one.
std::string PinConflict(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                        const graph::OpNode& op, const std::vector<NdSbpSignature>& all) {
  const Shape& mesh = op.placement.hierarchy();
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    const auto& pin = graph.tensor(op.outputs[o]).pin;
    if (pin && std::none_of(all.begin(), all.end(), [&](const NdSbpSignature& sig) {
          return pin->Allows(sig.outputs[o], mesh);
        })) {
      return " produces the pinned layout " + pin->ToString() + " of tensor '" +
             graph.tensor(op.outputs[o]).name + "'";
    }
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (const graph::TensorPin* pin = ReadPin(graph, registry, op, op.inputs[i])) {
      return " reads input '" + graph.tensor(op.inputs[i]).name + "' in its pinned layout " +
             pin->ToString() + " together with the other pins";
    }
  }
  return " fits its shapes";
}

std::vector<NdSbpSignature> CandidatesOf(const graph::LogicalGraph& graph,
                                         const graph::OpRegistry& registry, const graph::OpNode& op,
                                         bool data_parallel_only,
                                         graph::NdSignatureCache& signatures) {
  std::vector<graph::TensorMeta> inputs;
  for (TensorId t : op.inputs) inputs.push_back(graph.tensor(t).meta);
  const graph::OpContext ctx{op.type, op.attrs, inputs};
  const Shape& mesh = op.placement.hierarchy();
  const std::vector<NdSbpSignature>& all = signatures.Get(registry.Find(op.type), ctx, mesh);
  std::vector<NdSbpSignature> kept;
  for (const NdSbpSignature& sig : all) {
    bool ok = true;
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const auto& pin = graph.tensor(op.outputs[o]).pin;
      ok = ok && (!pin || pin->Allows(sig.outputs[o], mesh));
    }
    const bool update = registry.Find(op.type).role == graph::OpRole::kOptimizerUpdate;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const graph::TensorPin* pin = ReadPin(graph, registry, op, op.inputs[i]);
      ok = ok && (!pin || ReadableAs(*pin, sig.inputs[i], mesh, update));
    }
    if (ok && data_parallel_only && !op.outputs.empty()) {
      const graph::OpRole role = registry.Find(op.type).role;
      if (role == graph::OpRole::kVariable) ok = AllAxes(sig.outputs[0], sbp::Sbp::Broadcast());
      if (role == graph::OpRole::kInput) ok = AllAxes(sig.outputs[0], sbp::Sbp::Split(0));
    }
    if (ok) kept.push_back(sig);
  }
  if (kept.empty()) {
    const bool pinned_away = !all.empty() && !data_parallel_only;
    throw SbpError("op '" + op.name + "' (" + op.type + "): no SBP signature on " +
                   op.placement.ToString() +
                   (pinned_away ? PinConflict(graph, registry, op, all) : " fits its shapes") +
                   (data_parallel_only ? " under pure data parallelism" : ""));
  }
  return kept;
}

// Candidates, compute times and memory of every op: the unary part of the problem.
SearchModel BuildUnary(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                       const sbp::CostModel& cost_model, bool data_parallel_only,
                       graph::NdSignatureCache& signatures) {
  SearchModel model;
  std::map<std::string, int> placement_groups;
  for (const graph::OpNode& op : graph.ops()) {
    model.candidates.push_back(CandidatesOf(graph, registry, op, data_parallel_only, signatures));
    const graph::OpDef& def = registry.Find(op.type);
    model.assigns.push_back(def.role == graph::OpRole::kAssign);
    std::vector<graph::TensorMeta> logical;
    for (TensorId t : op.inputs) logical.push_back(graph.tensor(t).meta);
    const double flops = !def.is_source() && def.cost
                             ? def.cost(graph::OpContext{op.type, op.attrs, logical}).flops
                             : 0.0;
    const DType dtype = logical.empty() ? DType::kF32 : logical[0].dtype;
    std::vector<double> unary, memory;
    for (const NdSbpSignature& sig : model.candidates.back()) {
      // Device 0 holds the largest part of every balanced split: size and price it. Bytes
      // come from its physical tensors; the work divides over every mesh axis that splits
      // some tensor of the op (partial and broadcast inputs mean full-size work).
      const auto physical_bytes = [&](TensorId t, const sbp::NdSbp& nd) {
        const graph::TensorMeta& meta = graph.tensor(t).meta;
        return static_cast<double>(sbp::PhysicalShape(meta.shape, {op.placement, nd}, 0).numel() *
                                   DTypeSize(meta.dtype));
      };
      double in_bytes = 0, out_bytes = 0;
      for (size_t i = 0; i < op.inputs.size(); ++i)
        in_bytes += physical_bytes(op.inputs[i], sig.inputs[i]);
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        out_bytes += physical_bytes(op.outputs[o], sig.outputs[o]);
      }
      double parts = 1;
      const Shape& hierarchy = op.placement.hierarchy();
      for (int a = 0; a < hierarchy.rank(); ++a) {
        bool split = false;
        for (const auto& nd : sig.inputs) split = split || nd[a].is_split();
        for (const auto& nd : sig.outputs) split = split || nd[a].is_split();
        if (split) parts *= static_cast<double>(hierarchy[a]);
      }
      const double time =
          def.is_source() ? 0.0
                          : cost_model.ComputeTime(
                                flops / parts, static_cast<int64_t>(in_bytes + out_bytes), dtype);
      unary.push_back(time);
      memory.push_back(out_bytes);
    }
    model.problem.domain.push_back(static_cast<int>(unary.size()));
    model.problem.unary.push_back(std::move(unary));
    model.problem.memory.push_back(std::move(memory));
    const auto group = placement_groups.emplace(op.placement.ToString(),
                                                static_cast<int>(placement_groups.size()));
    model.problem.memory_group.push_back(group.first->second);
  }
  return model;
}

// The boxing time of every (producer signature, consumer signature) pair on every edge.
void AddPairwise(const graph::LogicalGraph& graph, BoxingPricer& pricer, SearchModel& model,
                 const SbpSearchOptions& options) {
  const auto total = static_cast<int64_t>(graph.ops().size());
  for (const graph::OpNode& consumer : graph.ops()) {
    if (options.progress) options.progress(consumer.id, 2 * total);
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const graph::TensorNode& tensor = graph.tensor(consumer.inputs[i]);
      const graph::OpNode& producer = graph.op(tensor.producer);
      MinSumProblem::Pairwise pair{producer.id, consumer.id, {}};
      std::vector<const sbp::NdSbp*> sources, targets;
      for (const NdSbpSignature& ps : model.candidates[producer.id]) {
        sources.push_back(&ps.outputs[tensor.output_index]);
      }
      for (const NdSbpSignature& cs : model.candidates[consumer.id])
        targets.push_back(&cs.inputs[i]);
      if (model.assigns[consumer.id] && i == 0) {
        for (const sbp::NdSbp* s : sources) {
          for (const sbp::NdSbp* t : targets) {
            pair.cost.push_back(EdgeTime(pricer, tensor.meta, {producer.placement, *s}, true,
                                         {consumer.placement, *t}));
          }
        }
      } else {
        pair.cost =
            pricer.Times(tensor.meta, producer.placement, sources, consumer.placement, targets);
      }
      model.problem.pairwise.push_back(std::move(pair));
    }
  }
}

SearchModel BuildModel(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                       const sbp::CostModel& cost_model, BoxingPricer& pricer,
                       const SbpSearchOptions& options, bool data_parallel_only,
                       graph::NdSignatureCache& signatures) {
  SearchModel model = BuildUnary(graph, registry, cost_model, data_parallel_only, signatures);
  AddPairwise(graph, pricer, model, options);
  return model;
}

// Method::kPropagate: ops in topological order, each taking its cheapest candidate given the
// layouts its producers already chose.
std::vector<int> Propagate(const graph::LogicalGraph& graph, BoxingPricer& pricer,
                           const SearchModel& model) {
  std::vector<int> choice(graph.ops().size(), 0);
  for (const OpId id : graph.TopologicalOrder()) {
    const graph::OpNode& op = graph.op(id);
    double best = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < model.candidates[id].size(); ++c) {
      double cost = model.problem.unary[id][c];
      for (size_t i = 0; i < op.inputs.size() && cost < best; ++i) {
        const graph::TensorNode& tensor = graph.tensor(op.inputs[i]);
        const graph::OpNode& producer = graph.op(tensor.producer);
        const NdSbpSignature& chosen = model.candidates[producer.id][choice[producer.id]];
        cost += EdgeTime(
            pricer, tensor.meta, {producer.placement, chosen.outputs[tensor.output_index]},
            model.assigns[id] && i == 0, {op.placement, model.candidates[id][c].inputs[i]});
      }
      if (cost < best) {
        best = cost;
        choice[id] = static_cast<int>(c);
      }
    }
  }
  return choice;
}

// Where a baseline's choices (by signature) sit in the full candidate lists.
std::vector<int> MapChoice(const SearchModel& from, const std::vector<int>& choice,
                           const SearchModel& to) {
  std::vector<int> mapped;
  for (size_t op = 0; op < choice.size(); ++op) {
    const auto& list = to.candidates[op];
    const auto it = std::find(list.begin(), list.end(), from.candidates[op][choice[op]]);
    mapped.push_back(static_cast<int>(it - list.begin()));
  }
  return mapped;
}

std::string LargestTensors(const graph::LogicalGraph& graph, const SearchModel& model) {
  std::vector<std::pair<double, std::string>> least;
  for (const graph::OpNode& op : graph.ops()) {
    const auto& memory = model.problem.memory[op.id];
    least.emplace_back(*std::min_element(memory.begin(), memory.end()), op.name);
  }
  std::sort(least.rbegin(), least.rend());
  std::ostringstream out;
  for (size_t k = 0; k < std::min<size_t>(3, least.size()); ++k) {
    out << (k ? ", " : "") << "'" << least[k].second << "' " << static_cast<int64_t>(least[k].first)
        << " bytes";
  }
  return out.str();
}

}  // namespace

SbpAssignment SearchSbp(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                        const sbp::CostModel& cost_model, const SbpSearchOptions& options) {
  BoxingPricer pricer(cost_model, options.boxing_detail, options.shared_times);
  graph::NdSignatureCache signatures;
  MinSumSolution solution;
  SearchModel model;
  if (options.method == SbpSearchOptions::Method::kPropagate) {
    model = BuildUnary(graph, registry, cost_model, options.data_parallel_only, signatures);
    solution.choice = Propagate(graph, pricer, model);
    solution.peak_memory = MinSumSolver::PeakMemory(model.problem, solution.choice);
    if (solution.peak_memory > options.memory_limit) {
      throw OutOfMemoryError(
          "the layouts propagated from the pins need " +
          std::to_string(static_cast<int64_t>(solution.peak_memory)) +
          " bytes on some device, over the limit of " +
          std::to_string(static_cast<int64_t>(options.memory_limit)) +
          "; the largest tensors at their leanest: " + LargestTensors(graph, model));
    }
  } else {
    model = BuildModel(graph, registry, cost_model, pricer, options, options.data_parallel_only,
                       signatures);
    model.problem.memory_limit = options.memory_limit;
    const MinSumSolver solver(options.table_budget);
    if (!options.data_parallel_only) {
      // Pure data parallelism is a baseline the search must match or beat.
      try {
        SbpSearchOptions quiet = options;  // its pricing is mostly the cache's: not reported
        quiet.progress = nullptr;
        SearchModel dp = BuildModel(graph, registry, cost_model, pricer, quiet, true, signatures);
        dp.problem.memory_limit = options.memory_limit;
        model.problem.baselines.push_back(MapChoice(dp, solver.Solve(dp.problem).choice, model));
      } catch (const Error&) {
        // Data parallelism does not apply (no batch axis to split) or does not fit.
      }
    }
    try {
      solution = solver.Solve(model.problem);
    } catch (const OutOfMemoryError& e) {
      throw OutOfMemoryError(
          e.message() + "; the largest tensors at their leanest: " + LargestTensors(graph, model));
    }
  }
  SbpAssignment assignment;
  assignment.exact = solution.exact;
  assignment.peak_memory = solution.peak_memory;
  for (const graph::OpNode& op : graph.ops()) {
    assignment.signatures.push_back(model.candidates[op.id][solution.choice[op.id]]);
    assignment.compute_time += model.problem.unary[op.id][solution.choice[op.id]];
  }
  const auto total = static_cast<int64_t>(graph.ops().size());
  for (const graph::OpNode& consumer : graph.ops()) {
    if (options.progress) options.progress(total + consumer.id, 2 * total);
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const graph::TensorNode& tensor = graph.tensor(consumer.inputs[i]);
      const sbp::Layout src = ProducedLayout(graph, assignment, tensor.id);
      const sbp::Layout dst{consumer.placement, assignment.signatures[consumer.id].inputs[i]};
      if (src == dst) continue;
      BoxingEdge edge{tensor.id, consumer.id, static_cast<int>(i),
                      pricer.Plan(tensor.meta, src, dst)};
      assignment.boxing_time += edge.plan->time();
      assignment.boxings.push_back(std::move(edge));
    }
  }
  return assignment;
}

sbp::Layout ProducedLayout(const graph::LogicalGraph& graph, const SbpAssignment& assignment,
                           graph::TensorId tensor) {
  const graph::TensorNode& node = graph.tensor(tensor);
  const graph::OpNode& producer = graph.op(node.producer);
  return {producer.placement, assignment.signatures[producer.id].outputs[node.output_index]};
}

}  // namespace twinflow::compiler
