// Simulating a Program on a modelled cluster (simulator/): the same Plan the runner executes,
// timed instead of run. Returns the report as plain Python values; the trace (when asked) as
// Chrome JSON text and as Perfetto protobuf bytes.
#include <pybind11/stl.h>

#include "engine/core/error.h"
#include "engine/trace/chrome_trace.h"
#include "engine/trace/perfetto_trace.h"
#include "python/src/program.h"
#include "simulator/hardware/cluster.h"
#include "simulator/sim_executor.h"

namespace twinflow::python {
namespace {

py::dict Simulate(const Program& program, const std::string& cluster, std::optional<int> nodes,
                  int64_t steps, int replicas, bool trace) {
  if (steps < 1) throw InvalidArgumentError("steps must be positive");
  if (replicas < 1) throw InvalidArgumentError("replicas must be positive");
  const sim::Topology topology(sim::LoadCluster(cluster, nodes));
  sim::SimOptions options;
  options.steps = steps;
  options.trace = trace;
  options.data_parallel_replicas = replicas;
  sim::SimResult r;
  {
    py::gil_scoped_release release;
    r = sim::Simulate(program.compiled.plan, topology, options);
  }
  if (!r.finished) {
    throw TimeoutError("the Plan deadlocks in simulation; waiting:\n" + r.deadlock_report);
  }
  const sim::ClusterSpec& spec = topology.spec();
  std::string json, perfetto;
  if (trace) {
    // Laid out once, written in both formats.
    const trace::TraceLayout layout = trace::LayOut(
        program.compiled.plan, r.trace, {"twinflow simulate", sim::DeviceKindName(spec), {}});
    json = trace::ChromeTraceJson(layout);
    perfetto = trace::PerfettoTrace(layout);
  }
  py::list devices;
  for (const sim::DeviceReport& d : r.devices) {
    devices.append(py::dict(
        py::arg("device") = d.name, py::arg("busy_s") = d.busy_s,
        py::arg("exposed_comm_s") = d.exposed_comm_s, py::arg("bubble_s") = d.bubble_s,
        py::arg("intra_bytes") = d.intra_bytes, py::arg("inter_bytes") = d.inter_bytes,
        py::arg("intra_utilisation") = d.intra_utilisation,
        py::arg("inter_utilisation") = d.inter_utilisation, py::arg("peak_bytes") = d.peak_bytes,
        py::arg("arena_bytes") = d.arena_bytes, py::arg("live_peak_bytes") = d.live_peak_bytes,
        py::arg("out_of_memory") = d.out_of_memory));
  }
  return py::dict(py::arg("cluster") = spec.name(), py::arg("nodes") = spec.nodes(),
                  py::arg("device_model") = spec.device().name(),
                  py::arg("memory_capacity") = sim::UsableMemoryBytes(spec),
                  py::arg("step_s") = r.step_s, py::arg("total_s") = r.total_s,
                  py::arg("mfu") = r.mfu, py::arg("flops_per_step") = r.flops_per_step,
                  py::arg("events") = r.events, py::arg("devices") = devices,
                  py::arg("trace_json") = json, py::arg("trace_perfetto") = py::bytes(perfetto));
}

}  // namespace

void BindSimulate(py::module_& m) {
  m.def("simulate", &Simulate, py::arg("program"), py::arg("cluster") = "cpu-local",
        py::arg("nodes") = py::none(), py::arg("steps") = 1, py::arg("replicas") = 1,
        py::arg("trace") = false);
  m.def("cluster_presets", &sim::PresetNames);
  // (devices, devices per node, memory per device) of a preset or spec file with `nodes`.
  m.def(
      "cluster_shape",
      [](const std::string& cluster, std::optional<int> nodes) {
        const sim::ClusterSpec spec = sim::LoadCluster(cluster, nodes);
        return py::make_tuple(spec.nodes() * spec.devices_per_node(), spec.devices_per_node(),
                              sim::UsableMemoryBytes(spec));
      },
      py::arg("cluster"), py::arg("nodes") = py::none());
}

}  // namespace twinflow::python
