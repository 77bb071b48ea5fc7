#include "launcher/sim_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "engine/compiler/parallelism.h"
#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/trace/chakra_export.h"
#include "launcher/cluster_args.h"
#include "launcher/cluster_plan.h"
#include "launcher/model_args.h"
#include "launcher/trace_args.h"
#include "planner/setup_warning.h"
#include "planner/throughput.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"

namespace twinflow::launcher {
namespace {

// The device with the largest arena (the first on a tie); null for none.
const sim::DeviceReport* Fullest(const sim::SimResult& r) {
  const sim::DeviceReport* fullest = nullptr;
  for (const sim::DeviceReport& d : r.devices) {
    if (!fullest || d.arena_bytes > fullest->arena_bytes) fullest = &d;
  }
  return fullest;
}

std::string Json(const sim::SimResult& r, const models::BuiltModel& model,
                 const sim::ClusterSpec& spec, const planner::Throughput& t) {
  const sim::DeviceReport* fullest = Fullest(r);
  const bool oom = fullest && fullest->out_of_memory;
  const int64_t headroom = sim::UsableMemoryBytes(spec) - (fullest ? fullest->arena_bytes : 0);
  std::ostringstream out;
  out << "{\n  \"cluster\": \"" << spec.name() << "\", \"nodes\": " << spec.nodes()
      << ", \"devices\": " << r.devices.size() << ",\n  \"strategy\": \""
      << model.strategy.ToString() << "\",\n  \"finished\": " << (r.finished ? "true" : "false")
      << ",\n  \"fits\": " << (oom ? "false" : "true")
      << ", \"out_of_memory\": " << (oom ? "true" : "false") << ", \"headroom_bytes\": " << headroom
      << ", \"fullest_device\": " << (fullest ? "\"" + fullest->name + "\"" : std::string("null"))
      << ", \"memory_capacity_bytes\": " << sim::UsableMemoryBytes(spec)
      << ", \"memory_reserved_bytes\": " << spec.device().reserved_bytes()
      << ",\n  \"step_s\": " << FormatFixed(r.step_s, 9)
      << ", \"samples_per_s\": " << FormatFixed(t.samples_per_s, 3)
      << ", \"tokens_per_device_s\": " << FormatFixed(t.tokens_per_device_s, 3)
      << ", \"model_tflops_per_device\": " << FormatFixed(t.model_flops_per_device_s / 1e12, 6)
      << ", \"mfu\": " << FormatFixed(r.mfu, 6) << ", \"events\": " << r.events
      << ",\n  \"devices_report\": [";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const sim::DeviceReport& d = r.devices[i];
    out << (i ? "," : "") << "\n    {\"device\": \"" << d.name
        << "\", \"busy_s\": " << FormatFixed(d.busy_s, 9)
        << ", \"exposed_comm_s\": " << FormatFixed(d.exposed_comm_s, 9)
        << ", \"bubble_s\": " << FormatFixed(d.bubble_s, 9)
        << ", \"intra_bytes\": " << FormatFixed(d.intra_bytes, 0)
        << ", \"inter_bytes\": " << FormatFixed(d.inter_bytes, 0)
        << ", \"intra_utilisation\": " << FormatFixed(d.intra_utilisation, 6)
        << ", \"inter_utilisation\": " << FormatFixed(d.inter_utilisation, 6)
        << ", \"peak_bytes\": " << d.peak_bytes << ", \"arena_bytes\": " << d.arena_bytes
        << ", \"live_peak_bytes\": " << d.live_peak_bytes
        << ", \"out_of_memory\": " << (d.out_of_memory ? "true" : "false") << "}";
  }
  out << "\n  ]\n}\n";
  return out.str();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The simulation's options from the flags; a long simulation reports its progress on stderr.
sim::SimOptions SimOptionsFor(const ParsedArgs& parsed, int64_t steps) {
  sim::SimOptions options;
  options.steps = steps;
  options.trace = parsed.Given("trace");
  options.act_graph = parsed.Given("chakra");
  if (parsed.Given("physical-devices")) {
    options.physical_devices = static_cast<int>(parsed.GetInt("physical-devices", 1, 1 << 20));
  }
  const auto sim_start = std::chrono::steady_clock::now();
  options.progress = [sim_start](const sim::SimProgress& p) {
    // Only long runs report: a line per million events after the first two seconds, with
    // the share of the acts done and the time left at the pace so far.
    const double wall = SecondsSince(sim_start);
    if (wall < 2) return;
    const double done =
        static_cast<double>(p.acts) / static_cast<double>(std::max<int64_t>(1, p.total_acts));
    std::cerr << "  ... " << p.events / 1000000 << " M events, " << FormatFixed(100 * done, 0)
              << "% of " << FormatFixed(p.total_acts / 1e6, 1) << " M acts, simulated "
              << FormatSeconds(p.simulated_s) << ", " << FormatSeconds(wall) << " so far";
    if (done > 0) std::cerr << ", about " << FormatSeconds(wall * (1 - done) / done) << " left";
    std::cerr << "\n";
  };
  return options;
}

// What was simulated, how it is split, and its step time, throughput and MFU.
void PrintSimSummary(std::ostream& out, const ClusterPlan& cluster_plan,
                     const graph::OpRegistry& registry, const sim::SimResult& r, int64_t steps,
                     const planner::Throughput& t) {
  const models::BuiltModel& model = cluster_plan.model;
  const plan::Plan& plan = cluster_plan.compiled.plan;
  const sim::Topology& topology = cluster_plan.topology;
  const sim::ClusterSpec& spec = topology.spec();
  const plan::DeviceFold fold = plan::DeviceFold::Of(plan);
  out << "simulated " << cluster_plan.parsed.Get("model") << ", strategy "
      << model.strategy.ToString() << ", on " << spec.name() << " x " << spec.nodes() << " nodes ("
      << plan.devices_size() * fold.copies << " of " << topology.devices() << " "
      << spec.device().name() << " devices), " << steps << " step" << (steps == 1 ? "" : "s")
      << ", optimizer " << models::OptimizerLabel(model) << "\n";
  out << FoldSummary(cluster_plan);
  out << "parallelism of the forward ops, by mesh axis"
      << (model.strategy.automatic ? "" : " (0: dp, 1: tp)") << ":\n"
      << compiler::ParallelismTable(compiler::ParallelismByFamily(
             model.graph, registry, cluster_plan.compiled.assignment));
  out << "step time " << FormatSeconds(r.step_s) << ", " << FormatFixed(t.samples_per_s, 1)
      << " samples/s, "
      << (t.tokens_per_device_s > 0 ? FormatFixed(t.tokens_per_device_s, 0) + " tokens/s per " +
                                          sim::DeviceKindName(spec) + ", "
                                    : "")
      << (t.model_flops_per_device_s > 0
              ? FormatFixed(t.model_flops_per_device_s / 1e12, 1) + " model TFLOP/s per " +
                    sim::DeviceKindName(spec) + ", "
              : "")
      << "MFU " << FormatFixed(100 * r.mfu, 1) << "%\n";
}

// Per device (the first 16; --json has all): time shares, link use and memory.
void PrintDeviceTable(std::ostream& out, const sim::SimResult& r, const sim::ClusterSpec& spec) {
  TextTable table({"device", "busy", "exposed comm", "bubble", "intra link", "inter link",
                   "live peak", "arena", "of capacity"});
  const size_t shown = std::min<size_t>(r.devices.size(), 16);
  for (size_t i = 0; i < shown; ++i) {
    const sim::DeviceReport& d = r.devices[i];
    table.Add({d.name, FormatFixed(100 * d.busy_s / r.total_s, 1) + "%",
               FormatFixed(100 * d.exposed_comm_s / r.total_s, 1) + "%",
               FormatFixed(100 * d.bubble_s / r.total_s, 1) + "%",
               FormatFixed(100 * d.intra_utilisation, 1) + "%",
               FormatFixed(100 * d.inter_utilisation, 1) + "%", FormatBytes(d.live_peak_bytes),
               FormatBytes(d.arena_bytes),
               FormatFixed(100.0 * d.arena_bytes / sim::UsableMemoryBytes(spec), 1) + "%" +
                   (d.out_of_memory ? " OOM" : "")});
  }
  table.Print(out);
  if (shown < r.devices.size())
    out << "(" << r.devices.size() - shown << " more devices in --json)\n";
}

// When the device with the largest arena runs out of memory: by how much, and its three
// largest registers, the first places to look for savings.
void PrintOutOfMemory(std::ostream& out, const sim::SimResult& r, const plan::Plan& plan,
                      const sim::ClusterSpec& spec) {
  const sim::DeviceReport* fullest = Fullest(r);
  if (!fullest || !fullest->out_of_memory) return;
  out << "OUT OF MEMORY: " << fullest->name << " needs " << FormatBytes(fullest->arena_bytes)
      << " (planned peak " << FormatBytes(fullest->peak_bytes) << ", live peak in the run "
      << FormatBytes(fullest->live_peak_bytes) << ") of "
      << FormatBytes(sim::UsableMemoryBytes(spec)) << " usable ("
      << FormatBytes(spec.device().reserved_bytes()) << " of the device's "
      << FormatBytes(spec.device().memory_bytes()) << " reserved); largest registers:";
  std::vector<std::pair<int64_t, std::string>> registers;
  for (const plan::Regst& reg : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(reg.producer()));
    if (producer.device() != fullest->plan_device || reg.bytes_per_slot() == 0) continue;
    registers.emplace_back(reg.bytes_per_slot() * reg.slots(),
                           producer.name() + " (" + FormatBytes(reg.bytes_per_slot()) + " x " +
                               std::to_string(reg.slots()) + ")");
  }
  std::sort(registers.rbegin(), registers.rend());
  for (size_t i = 0; i < std::min<size_t>(3, registers.size()); ++i) {
    out << (i ? ", " : " ") << registers[i].second;
  }
  out << "\n";
}

// Before a long simulation: the directory --chakra's files go to exists, or is made now.
void MakeParentDirectory(const std::string& prefix) {
  const std::filesystem::path parent = std::filesystem::path(prefix).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error) {
    throw InvalidArgumentError("--chakra " + prefix + ": cannot make " + parent.string() + ": " +
                               error.message());
  }
}

// The Chakra files of a simulated run: PREFIX.<device index>.et and PREFIX.comm_groups.json.
void WriteChakra(const std::string& prefix, const plan::Plan& plan,
                 const std::vector<plan::ActRecord>& acts, std::ostream& out) {
  const trace::ChakraTrace chakra = trace::ChakraExport(plan, acts);
  for (const auto& [device, bytes] : chakra.files) {
    WriteFileAtomically(prefix + "." + std::to_string(device) + ".et", bytes);
  }
  WriteFileAtomically(prefix + ".comm_groups.json", chakra.comm_groups_json);
  out << "wrote " << chakra.files.size() << " Chakra execution traces (" << chakra.nodes
      << " nodes): " << prefix << ".<rank>.et, and " << prefix << ".comm_groups.json\n";
}

// Compiles and simulates the job the flags describe.
int Simulated(const ArgParser& parser, const std::vector<std::string>& args, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  // Output flags are checked before the long part.
  const ParsedArgs given = parser.Parse(args);
  std::optional<TraceRequest> trace = TraceRequestFromArgs(given, "twinflow sim");
  if (given.Given("chakra")) MakeParentDirectory(given.Get("chakra"));
  const graph::OpRegistry registry = ops::BuiltinOps();
  const ClusterPlan cluster_plan = CompileForCluster(parser, args, registry);
  const ParsedArgs& parsed = cluster_plan.parsed;
  const sim::Topology& topology = cluster_plan.topology;
  const models::BuiltModel& model = cluster_plan.model;
  const plan::Plan& plan = cluster_plan.compiled.plan;
  const int64_t steps = parsed.GetInt("steps", 1, 1 << 16);
  if (const std::string w = planner::SetupWarning(model, topology.spec()); !w.empty()) {
    std::cerr << w << "\n";
  }
  const double compile_s = SecondsSince(start);
  const sim::SimResult r = sim::Simulate(plan, topology, SimOptionsFor(parsed, steps));
  const double total_s = SecondsSince(start);
  if (!r.finished) {
    throw TimeoutError("the Plan deadlocks in simulation at " + FormatSeconds(r.total_s) +
                       "; waiting:\n" + r.deadlock_report);
  }
  const planner::Throughput t = planner::ThroughputOf(model, r, topology.devices());
  const sim::ClusterSpec& spec = topology.spec();
  PrintSimSummary(out, cluster_plan, registry, r, steps, t);
  PrintDeviceTable(out, r, spec);
  PrintOutOfMemory(out, r, plan, spec);
  out << "compiled and simulated in " << FormatSeconds(total_s) << " (compile "
      << FormatSeconds(compile_s) << "), " << r.events << " events, "
      << FormatFixed(static_cast<double>(r.events) / std::max(total_s - compile_s, 1e-9) / 1e6, 2)
      << " M events/s\n";
  if (trace) {
    trace->options.device_prefix = sim::DeviceKindName(topology.spec());
    WriteTrace(*trace, plan, r.trace);
  }
  if (parsed.Given("chakra")) WriteChakra(parsed.Get("chakra"), plan, r.trace.acts, out);
  if (parsed.Given("json")) WriteFileAtomically(parsed.Get("json"), Json(r, model, spec, t));
  const sim::DeviceReport* fullest = Fullest(r);
  return fullest && fullest->out_of_memory ? kExitOutOfMemory : 0;
}

}  // namespace

int RunSimCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow sim",
                   "Compile a model for a modelled cluster and simulate its Plan: step time, "
                   "MFU, busy/bubble/exposed communication and memory per device.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  AddRanksFlag(parser);
  AddFoldFlag(parser);
  AddTraceFlags(parser);
  parser.Optional("steps", "N", "training steps to simulate", "1")
      .Optional("json", "FILE", "write the summary as JSON")
      .Optional("physical-devices", "N",
                "run the Plan's logical devices on the cluster's first N devices, logical device "
                "i on device i mod N, sharing them as `twinflow run` shares a GPU among several "
                "logical devices (one process, accelerators)")
      .Optional("chakra", "PREFIX",
                "export the run as Chakra execution traces for ASTRA-sim: PREFIX.<rank>.et per "
                "device and PREFIX.comm_groups.json (lowers every device: no fold)")

      .Epilog(
          "example:\n  twinflow sim --model gpt --layers 4 --strategy dp=2,tp=4,pp=2,mb=8 "
          "--cluster dgx-h100 --nodes 2 --trace sim.pftrace\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  return Simulated(parser, args, out);
}

}  // namespace twinflow::launcher
