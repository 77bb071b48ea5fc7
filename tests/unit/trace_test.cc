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
#include "engine/trace/chakra_et.pb.h"
#include "engine/trace/chakra_export.h"
#include "engine/trace/perfetto_trace.pb.h"
#include "engine/trace/trace_writer.h"
#include "planner/lower_options.h"
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
    compile.lower = planner::StrategyLowerOptions(model.strategy);
    compile.lower.fetches = {model.loss};
    TracedRun r;
    r.plan =
        compiler::Compile(model.graph, models::model_test_helpers::Registry(), cost, compile).plan;
    sim::SimOptions sim_options;
    sim_options.trace = true;
    sim_options.act_graph = true;
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

// The varint-length-prefixed messages of a Chakra file: its GlobalMetadata, then its nodes.
std::vector<chakra::Node> ReadChakra(const std::string& bytes) {
  std::vector<chakra::Node> nodes;
  size_t at = 0;
  bool metadata = true;
  while (at < bytes.size()) {
    uint64_t size = 0;
    for (int shift = 0;; shift += 7) {
      const auto c = static_cast<unsigned char>(bytes.at(at++));
      size |= static_cast<uint64_t>(c & 0x7F) << shift;
      if (c < 0x80) break;
    }
    const std::string message = bytes.substr(at, size);
    at += size;
    if (metadata) {
      chakra::GlobalMetadata meta;
      EXPECT_TRUE(meta.ParseFromString(message));
      EXPECT_FALSE(meta.version().empty());
      metadata = false;
    } else {
      EXPECT_TRUE(nodes.emplace_back().ParseFromString(message));
    }
  }
  return nodes;
}

std::string AttrOf(const chakra::Node& n, const std::string& name) {
  for (const chakra::AttributeProto& a : n.attr()) {
    if (a.name() != name) continue;
    if (a.has_string_val()) return a.string_val();
    if (a.has_int32_val()) return std::to_string(a.int32_val());
    if (a.has_int64_val()) return std::to_string(a.int64_val());
    if (a.has_uint64_val()) return std::to_string(a.uint64_val());
    return a.bool_val() ? "true" : "false";
  }
  return "";
}

// Every file decodes; its dependencies stay within it and form no cycle; every act is a node
// once; sends meet receives; every member of a group runs its collectives; and each kernel's
// node depends on the acts of its producers on the device, as the Plan's registers say.
TEST(Trace, ChakraFilesDecodeAndCarryThePlansDependencies) {
  const TracedRun& run = SimulatedGpt();
  const std::vector<plan::ActRecord>& acts = run.result.trace.acts;
  ASSERT_EQ(acts.size(), run.result.trace.spans.size());
  const ChakraTrace chakra = ChakraExport(run.plan, acts);
  ASSERT_EQ(chakra.files.size(), 8u);
  int64_t act_nodes = 0;
  std::multiset<std::string> sends, recvs;
  std::map<std::string, std::map<int64_t, int>> collectives;  // pg -> rank -> count
  for (const auto& [rank, bytes] : chakra.files) {
    const std::vector<chakra::Node> nodes = ReadChakra(bytes);
    std::map<uint64_t, const chakra::Node*> by_id;
    for (const chakra::Node& n : nodes) by_id[n.id()] = &n;
    std::map<uint64_t, int> unmet;  // Kahn's algorithm: no cycle leaves nodes unmet
    std::map<uint64_t, std::vector<uint64_t>> after;
    for (const chakra::Node& n : nodes) {
      EXPECT_EQ(AttrOf(n, "is_cpu_op"), "false");
      for (const auto* deps : {&n.data_deps(), &n.ctrl_deps()}) {
        for (uint64_t d : *deps) {
          EXPECT_TRUE(by_id.count(d)) << n.name() << " depends on a node of another file";
          ++unmet[n.id()];
          after[d].push_back(n.id());
        }
      }
      act_nodes += n.id() < acts.size();
      const std::string p2p = AttrOf(n, "comm_src") + ">" + AttrOf(n, "comm_dst") + " tag " +
                              AttrOf(n, "comm_tag") + " " + AttrOf(n, "comm_size");
      if (n.type() == chakra::COMM_SEND_NODE) sends.insert(p2p);
      if (n.type() == chakra::COMM_RECV_NODE) recvs.insert(p2p);
      if (n.type() == chakra::COMM_COLL_NODE) ++collectives[AttrOf(n, "pg_name")][rank];
    }
    std::vector<uint64_t> ready;
    for (const chakra::Node& n : nodes) {
      if (!unmet[n.id()]) ready.push_back(n.id());
    }
    EXPECT_FALSE(ready.empty());
    size_t done = 0;
    while (!ready.empty()) {
      const uint64_t id = ready.back();
      ready.pop_back();
      ++done;
      for (uint64_t next : after[id]) {
        if (--unmet[next] == 0) ready.push_back(next);
      }
    }
    EXPECT_EQ(done, nodes.size()) << "a dependency cycle in rank " << rank;
    // Each kernel depends on an act of every producer of its same-device inputs.
    for (const chakra::Node& n : nodes) {
      if (n.id() >= acts.size()) continue;
      const plan::Task& t = run.plan.tasks(static_cast<int>(acts[n.id()].task));
      if (t.kind() != plan::COMPUTE) continue;
      std::set<int64_t> producers;
      for (uint64_t d : n.data_deps()) {
        if (d < acts.size()) producers.insert(acts[d].task);
      }
      for (int64_t r : t.consumed_regsts()) {
        const plan::Regst& regst = run.plan.regsts(static_cast<int>(r));
        const plan::Task& producer = run.plan.tasks(static_cast<int>(regst.producer()));
        if (regst.lag() != 0 || regst.order_counts_size() > 0 || producer.device() != t.device()) {
          continue;
        }
        EXPECT_TRUE(producers.count(producer.id())) << n.name() << " misses " << producer.name();
      }
    }
  }
  EXPECT_EQ(act_nodes, static_cast<int64_t>(acts.size()));
  EXPECT_FALSE(sends.empty());
  EXPECT_EQ(sends, recvs);
  EXPECT_FALSE(collectives.empty());
  for (const auto& [pg, by_rank] : collectives) {
    EXPECT_NE(chakra.comm_groups_json.find("\"" + pg + "\": ["), std::string::npos) << pg;
    for (const auto& [rank, n] : by_rank) EXPECT_EQ(n, by_rank.begin()->second) << pg;
  }
}

}  // namespace
}  // namespace twinflow::trace
