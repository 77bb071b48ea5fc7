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
  int64_t max_micro_batches = 8;
  std::string options;
  int64_t top = 20;
  bool exhaustive = false;
  int jobs = 1;
  bool replica = false;
  bool pipeline = true;           // the graph has pipeline stages
  bool sequence_parallel = true;  // the graph has sequence-parallel pins
  bool progress = true;
};

void PrintLine(const planner::TuneProgress& p) {
  const planner::Outcome& o = *p.outcome;
  std::ostringstream line;
  line << "["
       << (p.members > 1 ? std::string(p.member_noun) + " " + std::to_string(p.member) + ": " : "")
       << p.done << "/" << p.share << ", " << FormatSeconds(p.wall_s) << ", about "
       << FormatSeconds(p.left_s) << " left] " << o.candidate.Compact() << ": "
       << (o.ok() ? "step " + FormatSeconds(o.step_s) : o.why) << "\n";
  std::cerr << line.str() << std::flush;
}

// (rows as JSON text, candidates, interrupted). `build(strategy_text, devices)` returns a Model.
py::tuple Tune(const py::function& build, const TuneArgs& a) {
  if (a.jobs < 1 || a.jobs > 8) throw InvalidArgumentError("jobs must be in [1, 8]");
  const sim::Topology topology(sim::LoadCluster(a.cluster, a.nodes));
  planner::CandidateSpace space;
  space.devices = topology.devices();
  space.per_node = topology.spec().devices_per_node();
  if (a.max_micro_batches < 1 || a.max_micro_batches > 1024) {
    throw InvalidArgumentError("max_micro_batches must be in [1, 1024]");
  }
  space.max_mb = a.max_micro_batches;
  try {
    space.base = planner::ParseTuneOptions(a.options);
  } catch (const Error& e) {
    RethrowPrefixed(e, "options: ");
  }
  space.pipeline = a.pipeline;
  space.sequence_parallel = a.sequence_parallel;
  const std::vector<parallel::Strategy> candidates = planner::EnumerateCandidates(space);
  const graph::OpRegistry registry = ops::BuiltinOps();
  planner::TuneOptions options;
  options.cost = sim::SearchCostConfig(topology.spec());
  options.top = a.top;
  options.exhaustive = a.exhaustive;
  options.fold = a.replica ? planner::FoldMode::kReplica : planner::FoldMode::kDataParallel;
  bool interrupted = false;
  const planner::ModelBuilder builder = [&](const parallel::Strategy& s) {
    try {
      return build(s.Compact(), topology.devices()).cast<Model>().built;
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
  planner::TuneHooks hooks;
  hooks.stop = [&] {
    if (!interrupted && PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
    }
    return interrupted;
  };
  if (a.progress) hooks.progress = PrintLine;
  planner::Tuner tuner(builder, registry, topology, options);
  const std::vector<int64_t> order = tuner.Order(candidates, hooks, true);
  std::cerr.flush();
  const std::unique_ptr<planner::TuneGroup> group = planner::ForkTune(a.jobs);
  const std::vector<planner::Outcome> outcomes = tuner.Run(candidates, order, *group, hooks);
  if (group->member() != 0) planner::EndForkedChild();
  return py::make_tuple(planner::OutcomesJson(outcomes), candidates.size(), interrupted);
}

}  // namespace

void BindTune(py::module_& m) {
  // The strategies the tuner tries on `devices` devices, `per_node` to a node
  // (planner/tune_candidates.h), as their compact texts.
  m.def(
      "tune_candidates",
      [](int64_t devices, int64_t per_node, int64_t max_micro_batches, const std::string& options,
         bool pipeline, bool sequence_parallel) {
        planner::CandidateSpace space{devices,           per_node,
                                      max_micro_batches, planner::ParseTuneOptions(options),
                                      pipeline,          sequence_parallel};
        std::vector<std::string> out;
        for (const parallel::Strategy& c : planner::EnumerateCandidates(space)) {
          out.push_back(c.Compact());
        }
        return out;
      },
      py::arg("devices"), py::arg("per_node"), py::arg("max_micro_batches"),
      py::arg("options") = "", py::arg("pipeline") = true, py::arg("sequence_parallel") = true);
  m.def(
      "tune",
      [](const py::function& build, const std::string& cluster, std::optional<int> nodes,
         int64_t max_micro_batches, const std::string& options, int64_t top, bool exhaustive,
         int jobs, bool replica, bool pipeline, bool sequence_parallel, bool progress) {
        return Tune(build, TuneArgs{cluster, nodes, max_micro_batches, options, top, exhaustive,
                                    jobs, replica, pipeline, sequence_parallel, progress});
      },
      py::arg("build"), py::arg("cluster"), py::arg("nodes") = py::none(),
      py::arg("max_micro_batches") = 8, py::arg("options") = "", py::arg("top") = 20,
      py::arg("exhaustive") = false, py::arg("jobs") = 1, py::arg("replica") = false,
      py::arg("pipeline") = true, py::arg("sequence_parallel") = true, py::arg("progress") = true);
}

}  // namespace twinflow::python
