#include "engine/trace/trace_layout.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <numeric>
#include <utility>

#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_rates.h"
#include "engine/trace/task_bytes.h"

namespace twinflow::trace {
namespace {

// "bf16[8,1024] f32[1024]": the tensors a task writes (control registers left out).
std::string Shapes(const plan::Plan& plan, const plan::Task& t) {
  std::string text;
  for (int64_t r : t.produced_regsts()) {
    if (r < 0 || r >= plan.regsts_size()) continue;
    const plan::TensorDesc& tensor = plan.regsts(static_cast<int>(r)).tensor();
    if (tensor.dtype() == plan::DTYPE_UNSPECIFIED) continue;
    text += (text.empty() ? "" : " ") + plan::EnumName(tensor.dtype()) + "[";
    for (int i = 0; i < tensor.shape_size(); ++i) {
      text += (i ? "," : "") + std::to_string(tensor.shape(i));
    }
    text += "]";
  }
  return text;
}

// The earliest span's start: time 0 of the trace.
int64_t TraceOrigin(const std::vector<plan::TraceSpan>& spans) {
  int64_t origin = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    origin = i == 0 ? spans[i].start_ns : std::min(origin, spans[i].start_ns);
  }
  return origin;
}

std::vector<TaskLabel> TaskLabels(const plan::Plan& plan) {
  std::vector<TaskLabel> labels(static_cast<size_t>(plan.tasks_size()));
  for (const plan::Task& t : plan.tasks()) {
    if (t.id() < 0 || t.id() >= plan.tasks_size()) continue;
    TaskLabel& label = labels[static_cast<size_t>(t.id())];
    label.name = t.name();
    label.category = plan::TaskKind_Name(t.kind());
    label.args.bytes = CommBytes(plan, t);
    if (t.kind() == plan::COMPUTE) label.args.flops = t.flops();
    label.args.shapes = Shapes(plan, t);
  }
  return labels;
}

// Builds the layout's tracks and slices; one per run of LayOut.
class Builder {
 public:
  Builder(const plan::Plan& plan, const plan::TraceRecord& record, const TraceOptions& options,
          TraceLayout& layout)
      : plan_(plan), record_(record), options_(options), layout_(layout) {}

  void Processes();
  void ActSlices(int64_t origin);
  void Flows();
  void LinkSlices(int64_t origin);
  void Counters(int64_t origin);

 private:
  int NewTrack(int process, const std::string& name);
  bool KeepsSpan(const plan::TraceSpan& s) const;

  const plan::Plan& plan_;
  const plan::TraceRecord& record_;
  const TraceOptions& options_;
  TraceLayout& layout_;
  std::vector<int> process_of_;         // by plan device: index into processes, -1 dropped
  std::vector<int> next_tid_;           // by process
  std::vector<int64_t> slice_of_span_;  // by span: index into slices, -1 dropped
};

int Builder::NewTrack(int process, const std::string& name) {
  layout_.tracks.push_back({process, next_tid_[static_cast<size_t>(process)]++, name});
  return static_cast<int>(layout_.tracks.size()) - 1;
}

// A process per kept device, each with a compute (tid 0) and a communication (tid 1) track.
void Builder::Processes() {
  process_of_.assign(static_cast<size_t>(plan_.devices_size()), -1);
  for (int d = 0; d < plan_.devices_size(); ++d) {
    const plan::Device& device = plan_.devices(d);
    if (!options_.filter.KeepsDevice(device.index())) continue;
    const std::string prefix =
        options_.device_prefix.empty() ? plan::EnumName(device.type()) : options_.device_prefix;
    process_of_[static_cast<size_t>(d)] = static_cast<int>(layout_.processes.size());
    layout_.processes.push_back(
        {static_cast<int>(device.index()), prefix + ":" + std::to_string(device.index())});
    next_tid_.push_back(0);
    NewTrack(static_cast<int>(layout_.processes.size()) - 1, "compute");
    NewTrack(static_cast<int>(layout_.processes.size()) - 1, "communication");
  }
}

bool Builder::KeepsSpan(const plan::TraceSpan& s) const {
  if (s.task < 0 || s.task >= plan_.tasks_size()) return false;
  const plan::Task& t = plan_.tasks(static_cast<int>(s.task));
  if (t.device() < 0 || t.device() >= plan_.devices_size()) return false;
  return process_of_[static_cast<size_t>(t.device())] >= 0 && options_.filter.KeepsKind(t.kind());
}

// Each (device, stream)'s acts in time order, packed greedily onto the stream's tracks: an act
// goes onto the first track free by its start, so that no two slices of a track overlap.
void Builder::ActSlices(int64_t origin) {
  std::map<std::pair<int, int>, std::vector<size_t>> streams;  // (process, stream) -> spans
  for (size_t i = 0; i < record_.spans.size(); ++i) {
    const plan::TraceSpan& s = record_.spans[i];
    if (!KeepsSpan(s)) continue;
    const int device = plan_.tasks(static_cast<int>(s.task)).device();
    streams[{process_of_[static_cast<size_t>(device)], s.stream == 0 ? 0 : 1}].push_back(i);
  }
  slice_of_span_.assign(record_.spans.size(), -1);
  for (auto& [key, spans] : streams) {
    std::stable_sort(spans.begin(), spans.end(), [&](size_t a, size_t b) {
      return record_.spans[a].start_ns < record_.spans[b].start_ns;
    });
    // Processes() made each process's compute and communication tracks first, in order.
    std::vector<std::pair<int, int64_t>> lanes = {{2 * key.first + key.second, INT64_MIN}};
    for (size_t i : spans) {
      const plan::TraceSpan& s = record_.spans[i];
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane].second > s.start_ns) ++lane;
      if (lane == lanes.size()) {
        const std::string stream = key.second == 0 ? "compute" : "communication";
        lanes.push_back({NewTrack(key.first, stream + " " + std::to_string(lane + 1)), 0});
      }
      lanes[lane].second = std::max(s.end_ns, s.start_ns);
      slice_of_span_[i] = static_cast<int64_t>(layout_.slices.size());
      layout_.slices.push_back({lanes[lane].first, s.start_ns - origin,
                                std::max<int64_t>(0, s.end_ns - s.start_ns), s.task, 0});
    }
  }
}

// The tasks on other devices whose data `task` reads: its SEND (for a RECV), and the
// producers of the data registers it consumes from another device.
std::vector<int64_t> CrossDeviceSources(const plan::Plan& plan, int64_t task,
                                        const std::vector<int64_t>& peer_send) {
  const plan::Task& t = plan.tasks(static_cast<int>(task));
  std::vector<int64_t> sources;
  if (peer_send[static_cast<size_t>(task)] >= 0) sources.push_back(peer_send[task]);
  for (int64_t r : t.consumed_regsts()) {
    if (r < 0 || r >= plan.regsts_size()) continue;
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (regst.lag() != 0 || regst.tensor().dtype() == plan::DTYPE_UNSPECIFIED) continue;
    if (plan.tasks(static_cast<int>(regst.producer())).device() != t.device()) {
      sources.push_back(regst.producer());
    }
  }
  return sources;
}

// Flows for data crossing devices: from each act of a producer to the same act of its consumer
// on another device (a COPY reading another device's register, a SEND's RECV). Acts of one
// task come in piece order, so the k-th meet the k-th; a flow is kept when both ends are.
void Builder::Flows() {
  std::map<int64_t, std::vector<size_t>> acts;  // task -> its spans in order
  for (size_t i = 0; i < record_.spans.size(); ++i) {
    const int64_t task = record_.spans[i].task;
    if (task >= 0 && task < plan_.tasks_size()) acts[task].push_back(i);
  }
  const std::vector<int64_t> peer_send = plan::PeerSends(plan_);
  for (const auto& [task, mine] : acts) {
    for (int64_t source : CrossDeviceSources(plan_, task, peer_send)) {
      const auto theirs = acts.find(source);
      if (theirs == acts.end()) continue;
      for (size_t k = 0; k < std::min(mine.size(), theirs->second.size()); ++k) {
        const int64_t from = slice_of_span_[theirs->second[k]];
        const int64_t to = slice_of_span_[mine[k]];
        if (from >= 0 && to >= 0) {
          layout_.flows.push_back({static_cast<size_t>(from), static_cast<size_t>(to)});
        }
      }
    }
  }
}

// Each link of a kept device as a track of its own (in the order its links first appear),
// with a slice per stretch of constant non-zero load, so a link's busy time reads like a
// stream's.
void Builder::LinkSlices(int64_t origin) {
  std::map<std::pair<int, std::string>, std::pair<int, const plan::LinkSample*>> open;
  const auto close = [&](const plan::LinkSample& from, int64_t end_ns, int track) {
    if (from.load <= 0 || end_ns <= from.ns) return;
    layout_.slices.push_back({track, from.ns - origin, end_ns - from.ns, -1, from.load});
  };
  for (const plan::LinkSample& l : record_.links) {
    if (l.device < 0 || l.device >= plan_.devices_size()) continue;
    const int process = process_of_[static_cast<size_t>(l.device)];
    if (process < 0) continue;
    auto [it, added] = open.try_emplace({process, l.link}, -1, nullptr);
    if (added) it->second.first = NewTrack(process, l.link);
    if (it->second.second) close(*it->second.second, l.ns, it->second.first);
    it->second.second = &l;
  }
}

// A live-memory counter per kept device, and a load counter per link of one.
void Builder::Counters(int64_t origin) {
  std::map<std::pair<int, std::string>, int> counter;
  const auto point = [&](int process, const std::string& name, bool bytes, int64_t ns,
                         double value) {
    auto [it, added] = counter.try_emplace({process, name}, 0);
    if (added) {
      it->second = static_cast<int>(layout_.counters.size());
      layout_.counters.push_back({process, name, bytes});
    }
    layout_.points.push_back({it->second, ns - origin, value});
  };
  for (const plan::MemorySample& m : record_.memory) {
    if (m.device < 0 || m.device >= plan_.devices_size()) continue;
    const int process = process_of_[static_cast<size_t>(m.device)];
    if (process >= 0) point(process, "memory", true, m.ns, static_cast<double>(m.bytes));
  }
  for (const plan::LinkSample& l : record_.links) {
    if (l.device < 0 || l.device >= plan_.devices_size()) continue;
    const int process = process_of_[static_cast<size_t>(l.device)];
    if (process >= 0) point(process, l.link, false, l.ns, l.load);
  }
}

}  // namespace

std::string TraceLayout::SliceName(const TraceSlice& s) const {
  if (s.task >= 0) return tasks[static_cast<size_t>(s.task)].name;
  char load[32];
  std::snprintf(load, sizeof(load), " %.0f%%", 100 * s.load);
  return tracks[static_cast<size_t>(s.track)].name + load;
}

TraceLayout LayOut(const plan::Plan& plan, const plan::TraceRecord& record,
                   const TraceOptions& options) {
  TraceLayout layout;
  layout.title = options.title;
  layout.tasks = TaskLabels(plan);
  Builder builder(plan, record, options, layout);
  const int64_t origin = TraceOrigin(record.spans);
  builder.Processes();
  builder.ActSlices(origin);
  builder.Flows();
  if (options.filter.kinds.empty()) {
    builder.LinkSlices(origin);
    builder.Counters(origin);
  }
  return layout;
}

}  // namespace twinflow::trace
