// Compilation and what a compiled Program tells: its Plan (hash, save), the layouts and
// boxings the search chose (explain) and the memory plan per device.
#include <pybind11/stl.h>

#include <limits>

#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_io.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "planner/compile_model.h"
#include "planner/memory_report.h"
#include "python/src/program.h"
#include "simulator/hardware/cluster.h"
#include "simulator/hardware/search_cost.h"

namespace twinflow::python {
namespace {

// "data" (the data-parallel copies alike on the nodes, as `twinflow sim` folds), "replica"
// (every replica, --replica) or "none".
planner::FoldMode FoldModeOf(const std::string& fold) {
  if (fold == "data") return planner::FoldMode::kDataParallel;
  if (fold == "replica") return planner::FoldMode::kReplica;
  if (fold == "none") return planner::FoldMode::kNone;
  throw InvalidArgumentError("fold must be data, replica or none, got '" + fold + "'");
}

// The search's cost model: the cluster's (as the simulator times it) when one is named, else
// the preset `cost_model`.
Program Compile(const Model& model, int64_t devices_per_rank, const std::string& cost_model,
                const std::string& search, double memory_limit, int64_t devices_per_node,
                const std::string& cluster, std::optional<int> nodes, const std::string& fold) {
  sbp::AlphaBetaConfig config;
  planner::ModelCompileOptions options;
  if (cluster.empty()) {
    config = sbp::AlphaBetaPreset(cost_model);
    config.devices_per_node = devices_per_node;
  } else {
    const sim::ClusterSpec spec = sim::LoadCluster(cluster, nodes);
    config = sim::SearchCostConfig(spec);
    options.fold = planner::SimulationFold(FoldModeOf(fold), model.built.strategy, spec);
  }
  if (search != "auto" && search != "exact" && search != "propagate") {
    throw InvalidArgumentError("search must be auto, exact or propagate, got '" + search + "'");
  }
  // "auto" is the exact search, as `twinflow compile`, `run` and `sim` use (it falls back by
  // itself when its tables outgrow their budget).
  const bool exact = search != "propagate";
  options.search.method = exact ? compiler::SbpSearchOptions::Method::kExact
                                : compiler::SbpSearchOptions::Method::kPropagate;
  if (memory_limit > 0) options.search.memory_limit = memory_limit;
  options.fetches = model.fetches;
  options.devices_per_rank = devices_per_rank;
  Program program{model, {}, cluster.empty() ? cost_model : cluster};
  program.compiled = planner::CompileModel(model.built, *model.registry, config, options);
  return program;
}

py::dict Explain(const Program& p) {
  const graph::LogicalGraph& graph = p.model.built.graph;
  const compiler::SbpAssignment& a = p.compiled.assignment;
  py::list signatures;
  for (const graph::OpNode& op : graph.ops()) {
    signatures.append(py::dict(py::arg("op") = op.name, py::arg("type") = op.type,
                               py::arg("placement") = op.placement.ToString(),
                               py::arg("signature") = a.signatures[op.id].ToString()));
  }
  py::list boxings;
  for (const compiler::BoxingEdge& edge : a.boxings) {
    std::vector<std::string> steps;
    for (const sbp::BoxingStep& step : edge.plan->steps)
      steps.push_back(sbp::BoxingStepKindName(step.kind));
    boxings.append(py::dict(py::arg("consumer") = graph.op(edge.consumer).name,
                            py::arg("tensor") = graph.tensor(edge.tensor).name,
                            py::arg("src") = edge.plan->src.ToString(),
                            py::arg("dst") = edge.plan->dst.ToString(), py::arg("steps") = steps,
                            py::arg("bytes") = edge.plan->cross_device_bytes(),
                            py::arg("seconds") = edge.plan->time()));
  }
  return py::dict(py::arg("signatures") = signatures, py::arg("boxings") = boxings,
                  py::arg("compute_seconds") = a.compute_time,
                  py::arg("boxing_seconds") = a.boxing_time, py::arg("exact") = a.exact,
                  py::arg("strategy") = p.model.built.strategy.ToString());
}

// Per device (models/memory_report.h): the arena, the planned peak and the peak by category.
py::dict Memory(const Program& p) {
  const plan::Plan& plan = p.compiled.plan;
  py::list devices;
  for (const planner::DeviceMemory& m : planner::DeviceMemories(plan)) {
    const plan::Device& d = plan.devices(m.device);
    py::dict entry(py::arg("device") = plan::EnumName(d.type()) + ":" + std::to_string(d.index()),
                   py::arg("rank") = d.rank(), py::arg("stage") = m.stage,
                   py::arg("arena_bytes") = m.arena_bytes, py::arg("peak_bytes") = m.peak_bytes);
    py::dict parts;
    for (compiler::MemoryCategory c : compiler::kAllMemoryCategories) {
      parts[compiler::MemoryCategoryName(c)] = m.bytes[static_cast<int>(c)];
    }
    entry["categories"] = parts;
    devices.append(entry);
  }
  return py::dict(py::arg("devices") = devices,
                  py::arg("optimizer") = models::OptimizerLabel(p.model.built));
}

}  // namespace

void BindProgram(py::module_& m) {
  py::class_<Program>(m, "Program")
      .def_property_readonly("hash",
                             [](const Program& p) { return plan::ContentHash(p.compiled.plan); })
      .def_property_readonly("devices",
                             [](const Program& p) { return p.compiled.plan.devices_size(); })
      .def_property_readonly("ranks",
                             [](const Program& p) { return p.compiled.plan.cluster().ranks(); })
      .def_property_readonly("tasks", [](const Program& p) { return p.compiled.plan.tasks_size(); })
      .def_property_readonly("model", [](const Program& p) { return p.model; })
      .def("explain", &Explain)
      .def("memory", &Memory)
      .def("save_plan", [](const Program& p, const std::string& path) {
        plan::SavePlan(p.compiled.plan, path);
      });
  m.def("compile", &Compile, py::arg("model"), py::arg("devices_per_rank") = 0,
        py::arg("cost_model") = "cpu-host", py::arg("search") = "auto",
        py::arg("memory_limit") = 0.0, py::arg("devices_per_node") = 8, py::arg("cluster") = "",
        py::arg("nodes") = py::none(), py::arg("fold") = "none");
}

}  // namespace twinflow::python
