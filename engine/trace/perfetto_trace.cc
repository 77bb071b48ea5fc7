#include "engine/trace/perfetto_trace.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "engine/trace/delimited.h"
#include "engine/trace/perfetto_trace.pb.h"

namespace twinflow::trace {
namespace {

namespace pf = perfetto;

constexpr uint32_t kSequence = 1;
constexpr uint32_t kStateCleared = 1;  // TracePacket.sequence_flags bits
constexpr uint32_t kNeedsState = 2;

// Track uuids: processes from 1, layout tracks and counters in ranges of their own.
uint64_t ProcessUuid(size_t p) { return 1 + p; }
uint64_t TrackUuid(size_t t) { return (uint64_t{1} << 32) + t; }
uint64_t CounterUuid(size_t c) { return (uint64_t{2} << 32) + c; }

// The tables of interned strings.
constexpr int kNames = 0, kCategories = 1, kAnnotations = 2, kAnnotationValues = 3;

// What happens at one time on one track, in the order written: at equal times a slice ends
// before the next begins, so that a track's slices nest as laid out.
enum class EventKind { kEnd = 0, kInstant = 1, kBegin = 2, kCounter = 3 };

struct Event {
  int64_t ns = 0;
  EventKind kind = EventKind::kBegin;
  size_t index = 0;  // a slice or a counter point
};

std::vector<Event> TimeOrdered(const TraceLayout& layout) {
  std::vector<Event> events;
  events.reserve(2 * layout.slices.size() + layout.points.size());
  for (size_t i = 0; i < layout.slices.size(); ++i) {
    const TraceSlice& s = layout.slices[i];
    if (s.dur_ns == 0) {
      events.push_back({s.start_ns, EventKind::kInstant, i});
    } else {
      events.push_back({s.start_ns, EventKind::kBegin, i});
      events.push_back({s.start_ns + s.dur_ns, EventKind::kEnd, i});
    }
  }
  for (size_t i = 0; i < layout.points.size(); ++i) {
    events.push_back({layout.points[i].ns, EventKind::kCounter, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.ns != b.ns ? a.ns < b.ns : a.kind < b.kind;
  });
  return events;
}

// Appends packets to a trace file, interning strings on the one sequence it writes.
class PacketWriter {
 public:
  pf::TracePacket& packet() { return packet_; }
  // Writes the current packet as the next Trace.packet and starts a new one.
  void Emit() {
    packet_.set_trusted_packet_sequence_id(kSequence);
    out_ += static_cast<char>(0x0A);  // Trace.packet: field 1, length-delimited
    AppendDelimited(packet_, out_);
    packet_.Clear();
  }
  // The iid of `text` among `table`'s strings, interned in the current packet when new.
  uint64_t Intern(int table, const std::string& text) {
    auto [it, added] = iids_[table].try_emplace(text, iids_[table].size() + 1);
    if (added) {
      pf::InternedData* data = packet_.mutable_interned_data();
      pf::InternedString* entry = table == kNames        ? data->add_event_names()
                                  : table == kCategories ? data->add_event_categories()
                                  : table == kAnnotations
                                      ? data->add_debug_annotation_names()
                                      : data->add_debug_annotation_string_values();
      entry->set_iid(it->second);
      entry->set_name(text);
    }
    return it->second;
  }
  std::string Take() { return std::move(out_); }

 private:
  pf::TracePacket packet_;
  std::map<std::string, uint64_t> iids_[4];  // by table
  std::string out_;
};

// The descriptors of every process, track and counter track, first in the file.
void Describe(const TraceLayout& layout, PacketWriter& w) {
  for (size_t p = 0; p < layout.processes.size(); ++p) {
    pf::TrackDescriptor* d = w.packet().mutable_track_descriptor();
    d->set_uuid(ProcessUuid(p));
    d->mutable_process()->set_pid(layout.processes[p].pid);
    d->mutable_process()->set_process_name(layout.processes[p].name);
    w.packet().set_timestamp(0);
    if (p == 0) w.packet().set_sequence_flags(kStateCleared);
    w.Emit();
  }
  for (size_t t = 0; t < layout.tracks.size(); ++t) {
    const TraceTrack& track = layout.tracks[t];
    const int pid = layout.processes[static_cast<size_t>(track.process)].pid;
    pf::TrackDescriptor* d = w.packet().mutable_track_descriptor();
    d->set_uuid(TrackUuid(t));
    d->mutable_thread()->set_pid(pid);
    d->mutable_thread()->set_tid((int64_t{pid} << 20) + track.tid);  // unique in the trace
    d->mutable_thread()->set_thread_name(track.name);
    w.packet().set_timestamp(0);
    w.Emit();
  }
  for (size_t c = 0; c < layout.counters.size(); ++c) {
    const CounterTrack& counter = layout.counters[c];
    pf::TrackDescriptor* d = w.packet().mutable_track_descriptor();
    d->set_uuid(CounterUuid(c));
    d->set_parent_uuid(ProcessUuid(static_cast<size_t>(counter.process)));
    d->set_name(counter.name);
    d->mutable_counter()->set_unit(counter.bytes ? pf::CounterDescriptor::UNIT_SIZE_BYTES
                                                 : pf::CounterDescriptor::UNIT_UNSPECIFIED);
    w.packet().set_timestamp(0);
    w.Emit();
  }
}

void Annotate(const SliceArgs& args, pf::TrackEvent* e, PacketWriter& w) {
  if (args.bytes >= 0) {
    pf::DebugAnnotation* a = e->add_debug_annotations();
    a->set_name_iid(w.Intern(kAnnotations, "bytes"));
    a->set_int_value(args.bytes);
  }
  if (args.flops >= 0) {
    pf::DebugAnnotation* a = e->add_debug_annotations();
    a->set_name_iid(w.Intern(kAnnotations, "flops"));
    a->set_double_value(args.flops);
  }
  if (!args.shapes.empty()) {
    pf::DebugAnnotation* a = e->add_debug_annotations();
    a->set_name_iid(w.Intern(kAnnotations, "shapes"));
    a->set_string_value_iid(w.Intern(kAnnotationValues, args.shapes));
  }
}

// Flow ids (from 1) by slice: those starting at it, those ending at it.
struct SliceFlows {
  std::vector<std::pair<size_t, uint64_t>> out, in;  // (slice, id), sorted by slice
  static std::vector<uint64_t> Of(const std::vector<std::pair<size_t, uint64_t>>& list,
                                  size_t slice) {
    std::vector<uint64_t> ids;
    auto it = std::lower_bound(list.begin(), list.end(), std::pair<size_t, uint64_t>{slice, 0});
    for (; it != list.end() && it->first == slice; ++it) ids.push_back(it->second);
    return ids;
  }
};

SliceFlows FlowsBySlice(const TraceLayout& layout) {
  SliceFlows f;
  for (size_t i = 0; i < layout.flows.size(); ++i) {
    f.out.emplace_back(layout.flows[i].from, i + 1);
    f.in.emplace_back(layout.flows[i].to, i + 1);
  }
  std::sort(f.out.begin(), f.out.end());
  std::sort(f.in.begin(), f.in.end());
  return f;
}

// A slice's begin (or instant) event: its name, category, args and flows.
void SliceStart(const TraceLayout& layout, const TraceSlice& s, size_t index,
                const SliceFlows& flows, pf::TrackEvent* e, PacketWriter& w) {
  e->set_name_iid(w.Intern(kNames, layout.SliceName(s)));
  if (s.task >= 0) {
    const TaskLabel& label = layout.tasks[static_cast<size_t>(s.task)];
    e->add_category_iids(w.Intern(kCategories, label.category));
    Annotate(label.args, e, w);
  } else {
    e->add_category_iids(w.Intern(kCategories, "link"));
  }
  for (uint64_t id : SliceFlows::Of(flows.out, index)) e->add_flow_ids(id);
  for (uint64_t id : SliceFlows::Of(flows.in, index)) e->add_terminating_flow_ids(id);
}

}  // namespace

std::string PerfettoTrace(const TraceLayout& layout) {
  PacketWriter w;
  Describe(layout, w);
  const SliceFlows flows = FlowsBySlice(layout);
  for (const Event& event : TimeOrdered(layout)) {
    pf::TracePacket& packet = w.packet();
    packet.set_timestamp(static_cast<uint64_t>(std::max<int64_t>(0, event.ns)));
    packet.set_sequence_flags(kNeedsState);
    pf::TrackEvent* e = packet.mutable_track_event();
    if (event.kind == EventKind::kCounter) {
      const CounterPoint& p = layout.points[event.index];
      e->set_type(pf::TrackEvent::TYPE_COUNTER);
      e->set_track_uuid(CounterUuid(static_cast<size_t>(p.counter)));
      e->set_double_counter_value(p.value);
    } else {
      const TraceSlice& s = layout.slices[event.index];
      e->set_track_uuid(TrackUuid(static_cast<size_t>(s.track)));
      if (event.kind == EventKind::kEnd) {
        e->set_type(pf::TrackEvent::TYPE_SLICE_END);
      } else {
        e->set_type(event.kind == EventKind::kInstant ? pf::TrackEvent::TYPE_INSTANT
                                                      : pf::TrackEvent::TYPE_SLICE_BEGIN);
        SliceStart(layout, s, event.index, flows, e, w);
      }
    }
    w.Emit();
  }
  return w.Take();
}

}  // namespace twinflow::trace
