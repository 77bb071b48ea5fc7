// Traces of a simulated run (engine/trace): the Perfetto file parses back with our schema, holds
// every act once, on tracks where slices never overlap, with every interned string defined
// before use and every flow joined at both ends; filters keep only what was asked; bad names
// and filters are refused.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/core/error.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/trace/perfetto_trace.pb.h"
#include "engine/trace/trace_writer.h"
#include "simulator/hardware/cluster.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::trace {
namespace {

namespace pf = perfetto;

struct TracedRun {
  plan::Plan plan;
  sim::SimResult result;
};

// A small GPT, dp=2,tp=2,pp=2 over 4 micro-batches, simulated with its trace on one DGX node.
const TracedRun& SimulatedGpt() {
  static const TracedRun run = [] {
    models::BuildOptions options = models::model_test_helpers::Options("dp=2,tp=2,pp=2,mb=4", 8);
    options.device = DeviceType::kCuda;
    const models::BuiltModel model =
        models::BuildGpt(models::model_test_helpers::Registry(),
                         models::model_test_helpers::MegatronSizedGpt(2, 8), options);
    const sim::ClusterSpec spec = sim::Preset("dgx-a100", 1);
    const sbp::AlphaBetaCostModel cost(sim::SearchCostConfig(spec));
    compiler::CompileOptions compile;
    compile.lower = models::StrategyLowerOptions(model.strategy);
    compile.lower.fetches = {model.loss};
    TracedRun r;
    r.plan =
        compiler::Compile(model.graph, models::model_test_helpers::Registry(), cost, compile).plan;
    sim::SimOptions sim_options;
    sim_options.trace = true;
    r.result = sim::Simulate(r.plan, sim::Topology(spec), sim_options);
    return r;
  }();
  return run;
}

// What a parsed Perfetto trace holds, checked as it is read in file order.
struct ParsedTrace {
  std::map<uint64_t, std::string> processes;  // uuid -> name
  std::map<uint64_t, std::string> tracks;     // thread and counter uuids -> name
  int64_t slices = 0, link_slices = 0, counters = 0;
  int max_depth = 0;
  std::map<uint64_t, int> flow_starts, flow_ends;
};

ParsedTrace Parse(const std::string& bytes) {
  pf::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  ParsedTrace p;
  std::map<int, std::map<uint64_t, std::string>> interned;  // table -> iid -> text
  std::map<uint64_t, std::vector<uint64_t>> open;           // track -> begin times
  uint64_t last_time = 0;
  for (const pf::TracePacket& packet : trace.packet()) {
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    const pf::InternedData& data = packet.interned_data();
    for (const auto& e : data.event_names()) interned[0][e.iid()] = e.name();
    for (const auto& e : data.event_categories()) interned[1][e.iid()] = e.name();
    if (packet.has_track_descriptor()) {
      const pf::TrackDescriptor& d = packet.track_descriptor();
      if (d.has_process()) {
        p.processes[d.uuid()] = d.process().process_name();
      } else {
        EXPECT_TRUE(d.has_thread() || p.processes.count(d.parent_uuid())) << d.uuid();
        p.tracks[d.uuid()] = d.has_thread() ? d.thread().thread_name() : d.name();
      }
      continue;
    }
    const pf::TrackEvent& e = packet.track_event();
    EXPECT_GE(packet.timestamp(), last_time) << "events in time order";
    last_time = packet.timestamp();
    EXPECT_TRUE(p.tracks.count(e.track_uuid())) << "an event on an undescribed track";
    if (e.type() == pf::TrackEvent::TYPE_COUNTER) {
      ++p.counters;
      continue;
    }
    std::vector<uint64_t>& stack = open[e.track_uuid()];
    if (e.type() == pf::TrackEvent::TYPE_SLICE_END) {
      EXPECT_FALSE(stack.empty()) << "an end without a begin";
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    EXPECT_TRUE(interned[0].count(e.name_iid())) << "a name used before it is interned";
    EXPECT_EQ(e.category_iids_size(), 1);
    const std::string category = interned[1][e.category_iids(0)];
    ++(category == "link" ? p.link_slices : p.slices);
    for (uint64_t id : e.flow_ids()) ++p.flow_starts[id];
    for (uint64_t id : e.terminating_flow_ids()) ++p.flow_ends[id];
    if (e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      stack.push_back(packet.timestamp());
      p.max_depth = std::max(p.max_depth, static_cast<int>(stack.size()));
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "unclosed on " << track;
  return p;
}

TEST(Trace, PerfettoTraceParsesBackWithEveryActOnceAndNoOverlap) {
  const TracedRun& run = SimulatedGpt();
  ASSERT_TRUE(run.result.finished);
  const std::string bytes =
      EncodeTrace(run.plan, run.result.trace, {"sim", "gpu", {}}, TraceFormat::kPerfetto);
  const ParsedTrace p = Parse(bytes);
  ASSERT_EQ(p.processes.size(), 8u);
  for (const auto& [uuid, name] : p.processes) EXPECT_EQ(name.rfind("gpu:", 0), 0u) << name;
  EXPECT_EQ(p.slices, static_cast<int64_t>(run.result.trace.spans.size()));
  EXPECT_GT(p.link_slices, 0);
  EXPECT_GT(p.counters, 0);
  EXPECT_EQ(p.max_depth, 1) << "slices on a track never overlap, so never nest";
  EXPECT_FALSE(p.flow_starts.empty());
  EXPECT_EQ(p.flow_starts.size(), p.flow_ends.size());
  for (const auto& [id, n] : p.flow_starts) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(p.flow_ends.count(id), 1u) << "flow " << id << " never ends";
  }
  // Far smaller than the same trace in JSON.
  const std::string json =
      EncodeTrace(run.plan, run.result.trace, {"sim", "gpu", {}}, TraceFormat::kChromeJson);
  EXPECT_LT(bytes.size(), json.size());
}

TEST(Trace, EveryTrackOfTheLayoutHoldsDisjointSlicesInTimeOrder) {
  const TracedRun& run = SimulatedGpt();
  const TraceLayout layout = LayOut(run.plan, run.result.trace, {"sim", "gpu", {}});
  std::map<int, int64_t> track_end;
  for (const TraceSlice& s : layout.slices) {
    auto [it, added] = track_end.try_emplace(s.track, s.start_ns + s.dur_ns);
    if (!added) {
      EXPECT_GE(s.start_ns, it->second) << layout.tracks[s.track].name;
      it->second = s.start_ns + s.dur_ns;
    }
  }
  // Compute slices carry their flops and the shapes they write; communication their bytes.
  bool flops = false, bytes = false;
  for (const TraceSlice& s : layout.slices) {
    if (s.task < 0) continue;
    const SliceArgs& args = layout.tasks[static_cast<size_t>(s.task)].args;
    flops |= args.flops > 0 && !args.shapes.empty();
    bytes |= args.bytes > 0;
  }
  EXPECT_TRUE(flops && bytes);
}

TEST(Trace, FiltersKeepTheDevicesAndKindsAsked) {
  const TracedRun& run = SimulatedGpt();
  TraceOptions options{"sim", "gpu", ParseTraceFilter("0-1,5", "compute")};
  const TraceLayout layout = LayOut(run.plan, run.result.trace, options);
  std::set<int> pids;
  for (const TraceProcess& p : layout.processes) pids.insert(p.pid);
  EXPECT_EQ(pids, (std::set<int>{0, 1, 5}));
  int64_t expected = 0;
  for (const plan::TraceSpan& s : run.result.trace.spans) {
    const plan::Task& t = run.plan.tasks(static_cast<int>(s.task));
    const int64_t device = run.plan.devices(t.device()).index();
    expected += t.kind() == plan::COMPUTE && (device <= 1 || device == 5);
  }
  EXPECT_GT(expected, 0);
  EXPECT_EQ(static_cast<int64_t>(layout.slices.size()), expected);
  for (const TraceSlice& s : layout.slices) EXPECT_EQ(layout.tasks[s.task].category, "COMPUTE");
  EXPECT_TRUE(layout.points.empty()) << "a kind filter drops the counters";
}

TEST(Trace, BadNamesAndFiltersAreRefusedByName) {
  EXPECT_EQ(TraceFormatOf("a.json"), TraceFormat::kChromeJson);
  EXPECT_EQ(TraceFormatOf("a.pftrace"), TraceFormat::kPerfetto);
  EXPECT_EQ(TraceFormatOf("a.perfetto-trace"), TraceFormat::kPerfetto);
  EXPECT_NE(
      models::model_test_helpers::InvalidArgumentText([] { TraceFormatOf("a.txt"); }).find("a.txt"),
      std::string::npos);
  EXPECT_NE(models::model_test_helpers::InvalidArgumentText([] {
              ParseTraceFilter("0-x", "");
            }).find("0-x"),
            std::string::npos);
  EXPECT_NE(models::model_test_helpers::InvalidArgumentText([] {
              ParseTraceFilter("3-1", "");
            }).find("3-1"),
            std::string::npos);
  EXPECT_NE(models::model_test_helpers::InvalidArgumentText([] {
              ParseTraceFilter("", "comput");
            }).find("comput"),
            std::string::npos);
  EXPECT_EQ(ParseTraceFilter("", "Collective,SEND").kinds,
            (std::vector<plan::TaskKind>{plan::COLLECTIVE, plan::SEND}));
}

}  // namespace
}  // namespace twinflow::trace
