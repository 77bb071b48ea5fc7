// tw.tune's engine: the planner's Tuner (planner/tuner.h), the one `twinflow tune` drives, with
// a Python callable building each candidate's model. Its rows are the CLI's --json rows, made
// by the same code, so both front ends rank alike.
#include <Python.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <iostream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "planner/tune_candidates.h"
#include "planner/tuner.h"
#include "python/src/bindings.h"
#include "simulator/hardware/search_cost.h"

namespace twinflow::python {
namespace {

struct TuneArgs {
  std::string cluster = "dgx-h100";
  std::optional<int> nodes;
  int64_t max_micro_batches = 0;  // 0: no cap
  int64_t micro_batch_size = 0;   // 0: every size
  std::string options;
  int64_t top = 20;
  bool exhaustive = false;
  int jobs = 1;
  bool replica = false;
  bool pipeline = true;           // the graph has pipeline stages
  bool sequence_parallel = true;  // the graph has sequence-parallel pins
  bool progress = true;
  planner::TunedModel model;  // what the tuner reads of the model
};

// The candidates' space of `a` on `spec`, fitted to its model (whose attention FitSpaceToModel
// may make fused); prints the defaults it chose when `a.progress`.
planner::CandidateSpace SpaceOf(TuneArgs& a, const sim::ClusterSpec& spec) {
  if (a.max_micro_batches < 0 || a.max_micro_batches > (1 << 30)) {
    throw InvalidArgumentError("max_micro_batches must be positive");
  }
  if (a.micro_batch_size < 0 || a.micro_batch_size > (1 << 30)) {
    throw InvalidArgumentError("micro_batch_size must be positive");
  }
  planner::CandidateSpace space;
  space.devices = spec.nodes() * spec.devices_per_node();
  space.per_node = spec.devices_per_node();
  space.max_mb = a.max_micro_batches;
  space.micro_batch_size = a.micro_batch_size;
  try {
    space.base = planner::ParseTuneOptions(a.options);
  } catch (const Error& e) {
    RethrowPrefixed(e, "options: ");
  }
  space.pipeline = a.pipeline;
  space.sequence_parallel = a.sequence_parallel;
  for (const std::string& line :
       planner::FitSpaceToModel(space, a.model, spec.device().kind() == sim::DEVICE_KIND_GPU)) {
    if (a.progress) std::cerr << line << "\n";
  }
  return space;
}

// (rows as JSON text, candidates, interrupted). `build(strategy_text, devices, fused)` returns a
// Model (fused: with fused attention, which the tuner chose for an LLM on GPUs).
py::tuple Tune(const py::function& build, TuneArgs a) {
  if (a.jobs < 1 || a.jobs > 8) throw InvalidArgumentError("jobs must be in [1, 8]");
  const sim::Topology topology(sim::LoadCluster(a.cluster, a.nodes));
  const planner::CandidateSpace space = SpaceOf(a, topology.spec());
  const std::vector<parallel::Strategy> candidates = planner::EnumerateCandidates(space);
  const graph::OpRegistry registry = ops::BuiltinOps();
  planner::TuneOptions options;
  options.cost = sim::SearchCostConfig(topology.spec());
  options.top = a.top;
  options.exhaustive = a.exhaustive;
  options.fold = a.replica ? planner::FoldMode::kReplica : planner::FoldMode::kDataParallel;
  bool interrupted = false;
  // The candidate's model, at its own extent or a proxy's (0: the model's).
  const auto built = [&](const parallel::Strategy& s, const planner::ModelExtent& at) {
    try {
      return build(s.Compact(), topology.devices(), a.model.fused_attention, at.layers, at.batch)
          .cast<Model>()
          .built;
    } catch (py::error_already_set& e) {
      // Ctrl-C inside a build ends the tune after it, the candidate dropped; any other Python
      // error of the build (the engine's kinds among them) drops the candidate as an Error
      // would, with its first line.
      if (e.matches(PyExc_KeyboardInterrupt)) {
        interrupted = true;
        throw InvalidArgumentError("interrupted (Ctrl-C) while its model was built");
      }
      throw InvalidArgumentError(py::str(e.value()).cast<std::string>());
    }
  };
  const planner::ModelBuilder builder = [&](const parallel::Strategy& s) { return built(s, {}); };
  if (a.model.decoder) {  // a tw.models LLM: proxies as `twinflow tune` has them
    options.proxy = built;
    options.layers = a.model.layers;
    options.batch = a.model.batch;
  }
  planner::TuneHooks hooks;
  hooks.stop = [&] {
    if (!interrupted && PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
    }
    return interrupted;
  };
  if (a.progress)
    hooks.progress = [](const planner::TuneProgress& p) {
      std::cerr << planner::ProgressLine(p) << std::flush;
    };
  planner::Tuner tuner(builder, registry, topology, options);
  const std::vector<int64_t> order = tuner.Order(candidates, hooks, true);
  std::cerr.flush();
  const std::unique_ptr<planner::TuneGroup> group = planner::ForkTune(a.jobs);
  const std::vector<planner::Outcome> outcomes = tuner.Run(candidates, order, *group, hooks);
  if (group->member() != 0) planner::EndForkedChild();
  return py::make_tuple(planner::OutcomesJson(outcomes), candidates.size(), interrupted);
}

planner::TunedModel TunedModelOf(const py::tuple& model) {
  if (model.size() != 6) {
    throw InvalidArgumentError("model: (batch, layers, decoder, fused, given, recomputes)");
  }
  return planner::TunedModel{model[0].cast<int64_t>(), model[1].cast<int64_t>(),
                             model[2].cast<bool>(),    model[3].cast<bool>(),
                             model[4].cast<bool>(),    model[5].cast<bool>()};
}

}  // namespace

void BindTune(py::module_& m) {
  // The strategies the tuner tries on `cluster` x `nodes` for a model `model` (builtin_extent's
  // tuple), as their compact texts (planner/tune_candidates.h).
  m.def(
      "tune_candidates",
      [](const std::string& cluster, std::optional<int> nodes, const py::tuple& model,
         int64_t max_micro_batches, int64_t micro_batch_size, const std::string& options,
         bool pipeline, bool sequence_parallel) {
        TuneArgs a;
        a.cluster = cluster, a.nodes = nodes, a.model = TunedModelOf(model);
        a.max_micro_batches = max_micro_batches, a.micro_batch_size = micro_batch_size;
        a.options = options, a.pipeline = pipeline, a.sequence_parallel = sequence_parallel;
        a.progress = false;
        std::vector<std::string> out;
        const sim::ClusterSpec spec = sim::LoadCluster(cluster, nodes);
        for (const parallel::Strategy& c : planner::EnumerateCandidates(SpaceOf(a, spec))) {
          out.push_back(c.Compact());
        }
        return out;
      },
      py::arg("cluster"), py::arg("nodes"), py::arg("model"), py::arg("max_micro_batches") = 0,
      py::arg("micro_batch_size") = 0, py::arg("options") = "", py::arg("pipeline") = true,
      py::arg("sequence_parallel") = true);
  m.def(
      "tune",
      [](const py::function& build, const std::string& cluster, std::optional<int> nodes,
         const py::tuple& model, int64_t max_micro_batches, int64_t micro_batch_size,
         const std::string& options, int64_t top, bool exhaustive, int jobs, bool replica,
         bool pipeline, bool sequence_parallel, bool progress) {
        return Tune(build, TuneArgs{cluster, nodes, max_micro_batches, micro_batch_size, options,
                                    top, exhaustive, jobs, replica, pipeline, sequence_parallel,
                                    progress, TunedModelOf(model)});
      },
      py::arg("build"), py::arg("cluster"), py::arg("nodes") = py::none(), py::arg("model"),
      py::arg("max_micro_batches") = 0, py::arg("micro_batch_size") = 0, py::arg("options") = "",
      py::arg("top") = 20, py::arg("exhaustive") = false, py::arg("jobs") = 1,
      py::arg("replica") = false, py::arg("pipeline") = true, py::arg("sequence_parallel") = true,
      py::arg("progress") = true);
}

}  // namespace twinflow::python
