#include "engine/trace/chakra_export.h"

#include <algorithm>
#include <utility>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_rates.h"
#include "engine/trace/chakra_et.pb.h"
#include "engine/trace/delimited.h"
#include "engine/trace/task_bytes.h"

namespace twinflow::trace {
namespace {

namespace ch = chakra;

void Attr(ch::Node& n, const char* name, bool value) {
  ch::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(value);
}
void Attr(ch::Node& n, const char* name, int64_t value) {
  ch::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}
void AttrU64(ch::Node& n, const char* name, uint64_t value) {
  ch::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_uint64_val(value);
}
void AttrText(ch::Node& n, const char* name, const std::string& value) {
  ch::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(value);
}
// ASTRA-sim's and Chakra's readers take ranks and tags as int32, sizes as int64.
void PointToPoint(ch::Node& n, int64_t src, int64_t dst, int64_t bytes, int64_t tag) {
  for (const auto& [name, value] :
       {std::pair{"comm_src", src}, {"comm_dst", dst}, {"comm_tag", tag}}) {
    ch::AttributeProto* a = n.add_attr();
    a->set_name(name);
    a->set_int32_val(static_cast<int32_t>(value));
  }
  Attr(n, "comm_size", bytes);
}

ch::CollectiveCommType CommType(plan::CollectiveKind kind) {
  switch (kind) {
    case plan::ALL_GATHER:
      return ch::ALL_GATHER;
    case plan::REDUCE_SCATTER:
      return ch::REDUCE_SCATTER;
    case plan::ALL_TO_ALL:
      return ch::ALL_TO_ALL;
    case plan::BROADCAST:
      return ch::BROADCAST;
    default:
      return ch::ALL_REDUCE;
  }
}

uint64_t Micros(int64_t ns) {
  return static_cast<uint64_t>(std::max<int64_t>(0, (ns + 500) / 1000));
}

// Builds every device's nodes from the acts; one per export.
class Exporter {
 public:
  Exporter(const plan::Plan& plan, const std::vector<plan::ActRecord>& acts)
      : plan_(plan), acts_(acts), peer_send_(plan::PeerSends(plan)), next_id_(acts.size()) {
    std::vector<int64_t> count(static_cast<size_t>(plan.tasks_size()), 0);
    for (const plan::ActRecord& a : acts) act_number_.push_back(count[a.task]++);
  }

  void Act(size_t i);
  ChakraTrace Files();

 private:
  int DeviceOf(int64_t act) const {
    return plan_.tasks(static_cast<int>(acts_[static_cast<size_t>(act)].task)).device();
  }
  static ch::Node NewNode(uint64_t id, const std::string& name, ch::NodeType type);
  int64_t TagOf(int64_t send_task, int64_t act) {
    return tags_.try_emplace({send_task, act}, static_cast<int64_t>(tags_.size())).first->second;
  }
  void Deps(const plan::ActRecord& a, int device, ch::Node& n);
  void Copy(size_t i, ch::Node& n);

  const plan::Plan& plan_;
  const std::vector<plan::ActRecord>& acts_;
  const std::vector<int64_t> peer_send_;
  uint64_t next_id_;                            // ids past the acts': a COPY's SEND and RECV
  std::vector<int64_t> act_number_;             // by act: which act of its task
  std::map<int, std::vector<ch::Node>> nodes_;  // by plan device
  std::map<std::pair<int64_t, int64_t>, int64_t> tags_;  // (SEND task or -1 - COPY act, n)
};

ch::Node Exporter::NewNode(uint64_t id, const std::string& name, ch::NodeType type) {
  ch::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  Attr(n, "is_cpu_op", false);
  return n;
}

// The act's dependencies on its own device (a COPY's remote ones go through its RECVs).
void Exporter::Deps(const plan::ActRecord& a, int device, ch::Node& n) {
  for (int64_t d : a.data_deps) {
    if (DeviceOf(d) == device) n.add_data_deps(static_cast<uint64_t>(d));
  }
  for (int64_t d : a.ctrl_deps) {
    if (DeviceOf(d) == device) n.add_ctrl_deps(static_cast<uint64_t>(d));
  }
}

// A COPY reading other devices: per source device a SEND there (after the acts that made what
// it sends) and a RECV here (in the copy's order); the copy itself follows its RECVs.
void Exporter::Copy(size_t i, ch::Node& copy) {
  const plan::ActRecord& a = acts_[i];
  const plan::Task& t = plan_.tasks(static_cast<int>(a.task));
  std::map<int, int64_t> by_source;  // plan device -> bytes
  for (const plan::Transfer& tr : t.transfers()) {
    int64_t elements = 1;
    for (const plan::Range& r : tr.region().ranges()) elements *= r.end() - r.begin();
    const plan::Regst& src = plan_.regsts(static_cast<int>(tr.src_regst()));
    by_source[plan_.tasks(static_cast<int>(src.producer())).device()] +=
        elements * static_cast<int64_t>(DTypeSize(plan::FromProto(src.tensor().dtype(), t.name())));
  }
  const int64_t rank = plan_.devices(t.device()).index();
  for (const auto& [source, bytes] : by_source) {
    if (source == t.device()) continue;
    const int64_t tag = TagOf(-1 - static_cast<int64_t>(i), source);
    const int64_t source_rank = plan_.devices(source).index();
    ch::Node send = NewNode(next_id_++, copy.name() + " send", ch::COMM_SEND_NODE);
    for (int64_t d : a.data_deps) {
      if (DeviceOf(d) == source) send.add_data_deps(static_cast<uint64_t>(d));
    }
    PointToPoint(send, source_rank, rank, bytes, tag);
    ch::Node recv = NewNode(next_id_++, copy.name() + " recv", ch::COMM_RECV_NODE);
    for (uint64_t d : copy.ctrl_deps()) recv.add_ctrl_deps(d);
    PointToPoint(recv, source_rank, rank, bytes, tag);
    copy.add_data_deps(recv.id());
    copy.set_duration_micros(0);  // the transfer is the RECV's
    nodes_[source].push_back(std::move(send));
    nodes_[t.device()].push_back(std::move(recv));
  }
}

void Exporter::Act(size_t i) {
  const plan::ActRecord& a = acts_[i];
  const plan::Task& t = plan_.tasks(static_cast<int>(a.task));
  const int64_t k = act_number_[i];
  ch::Node n = NewNode(i, t.name() + " #" + std::to_string(k), ch::COMP_NODE);
  n.set_start_time_micros(Micros(a.start_ns));
  n.set_duration_micros(Micros(a.end_ns - a.start_ns));
  Deps(a, t.device(), n);
  const int64_t rank = plan_.devices(t.device()).index();
  const int64_t peer =
      t.peer() >= 0 && t.peer() < plan_.devices_size() ? plan_.devices(t.peer()).index() : 0;
  switch (t.kind()) {
    case plan::COLLECTIVE:
      n.set_type(ch::COMM_COLL_NODE);
      Attr(n, "comm_type", static_cast<int64_t>(CommType(t.collective().kind())));
      Attr(n, "comm_size", CommBytes(plan_, t));
      AttrText(n, "pg_name", std::to_string(t.collective().group() + 1));
      break;
    case plan::SEND:
      n.set_type(ch::COMM_SEND_NODE);
      PointToPoint(n, rank, peer, CommBytes(plan_, t), TagOf(t.id(), k));
      break;
    case plan::RECV:
      n.set_type(ch::COMM_RECV_NODE);
      PointToPoint(n, peer, rank, CommBytes(plan_, t),
                   TagOf(peer_send_[static_cast<size_t>(t.id())], k));
      break;
    default:
      if (t.kind() == plan::COPY) Copy(i, n);
      Attr(n, "num_ops", static_cast<int64_t>(t.kind() == plan::COMPUTE ? t.flops() : 0));
      AttrU64(n, "tensor_size", static_cast<uint64_t>(OutputBytes(plan_, t)));
  }
  nodes_[t.device()].push_back(std::move(n));
}

ChakraTrace Exporter::Files() {
  ChakraTrace trace;
  for (int d = 0; d < plan_.devices_size(); ++d) {
    std::string& file = trace.files[plan_.devices(d).index()];
    ch::GlobalMetadata meta;
    meta.set_version("0.0.4");
    ch::AttributeProto* source = meta.add_attr();
    source->set_name("twinflow_plan");
    source->set_string_val(plan_.content_hash());
    AppendDelimited(meta, file);
    std::vector<ch::Node>& nodes = nodes_[d];
    std::sort(nodes.begin(), nodes.end(),
              [](const ch::Node& x, const ch::Node& y) { return x.id() < y.id(); });
    for (const ch::Node& n : nodes) AppendDelimited(n, file);
    trace.nodes += static_cast<int64_t>(nodes.size());
  }
  return trace;
}

}  // namespace

ChakraTrace ChakraExport(const plan::Plan& plan, const std::vector<plan::ActRecord>& acts) {
  if (plan.fold().copies() > 1) {
    throw InvalidArgumentError("Chakra export needs the Plan of every device: --no-fold");
  }
  Exporter exporter(plan, acts);
  for (size_t i = 0; i < acts.size(); ++i) exporter.Act(i);
  ChakraTrace trace = exporter.Files();
  std::string& json = trace.comm_groups_json;
  json = "{";
  for (const plan::CommGroup& g : plan.groups()) {
    json +=
        std::string(json.size() > 1 ? ",\n " : "\n ") + "\"" + std::to_string(g.id() + 1) + "\": [";
    for (int m = 0; m < g.devices_size(); ++m) {
      json += (m ? ", " : "") + std::to_string(plan.devices(g.devices(m)).index());
    }
    json += "]";
  }
  json += "\n}\n";
  return trace;
}

}  // namespace twinflow::trace
