#include "engine/plan/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_rates.h"

namespace twinflow::plan {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// Each link of a device as a thread of its own (tid 2, 3, ...: in the order its links first
// appear), with a span per stretch of constant non-zero load named by that load, so a link's
// busy time reads like a stream's.
std::string LinkThreads(const std::vector<LinkSample>& links, int64_t origin) {
  std::map<std::pair<int, std::string>, int> tid;                 // (device, link) -> thread
  std::map<std::pair<int, std::string>, const LinkSample*> open;  // the segment in progress
  std::map<int, int> next_tid;
  std::string json;
  const auto close = [&](const LinkSample& from, int64_t end_ns, int thread) {
    if (from.load <= 0 || end_ns <= from.ns) return;
    char event[224];
    std::snprintf(event, sizeof(event),
                  ",\n{\"name\":\"%s %.0f%%\",\"cat\":\"link\",\"ph\":\"X\",\"ts\":%.3f,"
                  "\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                  from.link, 100 * from.load, static_cast<double>(from.ns - origin) * 1e-3,
                  static_cast<double>(end_ns - from.ns) * 1e-3, from.device, thread);
    json += event;
  };
  for (const LinkSample& l : links) {
    const std::pair<int, std::string> key{l.device, l.link};
    auto [it, added] = tid.emplace(key, 0);
    if (added) {
      it->second = 2 + next_tid[l.device]++;
      json += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(l.device) +
              ",\"tid\":" + std::to_string(it->second) + ",\"args\":{\"name\":\"" + Escape(l.link) +
              "\"}}";
    }
    const auto previous = open.find(key);
    if (previous != open.end()) close(*previous->second, l.ns, it->second);
    open[key] = &l;
  }
  return json;
}

// The earliest span's start: time 0 of the trace.
int64_t TraceOrigin(const std::vector<TraceSpan>& spans) {
  int64_t origin = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    origin = i == 0 ? spans[i].start_ns : std::min(origin, spans[i].start_ns);
  }
  return origin;
}

// A process a device, named as its device, with a compute (tid 0) and a communication (tid 1)
// thread.
std::string DeviceProcesses(const Plan& plan) {
  std::string json;
  for (const Device& d : plan.devices()) {
    const std::string pid = std::to_string(d.id());
    json += ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":\"" +
            EnumName(d.type()) + ":" + std::to_string(d.index()) + "\"}}";
    for (const auto& [tid, stream] : {std::pair{0, "compute"}, {1, "communication"}}) {
      json += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
              ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" + stream + "\"}}";
    }
  }
  return json;
}

// The bytes a communication task moves per act (the largest data register it reads or
// writes), or -1 for any other task.
int64_t CommBytes(const Plan& plan, const Task& t) {
  if (t.kind() != COLLECTIVE && t.kind() != SEND && t.kind() != RECV) return -1;
  int64_t bytes = 0;
  for (const auto* list : {&t.consumed_regsts(), &t.produced_regsts()}) {
    for (int64_t r : *list) {
      if (r >= 0 && r < plan.regsts_size())
        bytes = std::max(bytes, plan.regsts(static_cast<int>(r)).bytes_per_slot());
    }
  }
  return bytes;
}

// A complete event a span of a task of the Plan, named by the task, categorised by its kind;
// a communication act carries its bytes (args.bytes), so that its bandwidth can be read off.
std::string SpanEvents(const Plan& plan, const std::vector<TraceSpan>& spans, int64_t origin) {
  std::string json;
  for (const TraceSpan& s : spans) {
    if (s.task < 0 || s.task >= plan.tasks_size()) continue;
    const Task& t = plan.tasks(static_cast<int>(s.task));
    char times[128];
    std::snprintf(times, sizeof(times), "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d",
                  static_cast<double>(s.start_ns - origin) * 1e-3,
                  static_cast<double>(s.end_ns - s.start_ns) * 1e-3, t.device(), s.stream);
    const int64_t bytes = CommBytes(plan, t);
    json += ",\n{\"name\":\"" + Escape(t.name()) + "\",\"cat\":\"" + TaskKind_Name(t.kind()) +
            "\",\"ph\":\"X\"," + times +
            (bytes >= 0 ? ",\"args\":{\"bytes\":" + std::to_string(bytes) + "}" : "") + "}";
  }
  return json;
}

// One flow arrow, number `id`, from the middle of one act to the middle of another.
std::string FlowArrow(const Plan& plan, const TraceSpan& from, const TraceSpan& to, int64_t id,
                      int64_t origin) {
  std::string json;
  for (const TraceSpan* s : {&from, &to}) {
    char event[192];
    std::snprintf(event, sizeof(event),
                  ",\n{\"name\":\"data\",\"cat\":\"flow\",\"ph\":\"%s\",\"id\":%lld,"
                  "\"ts\":%.3f,\"pid\":%d,\"tid\":%d%s}",
                  s == &from ? "s" : "f", static_cast<long long>(id),
                  static_cast<double>((s->start_ns + s->end_ns) / 2 - origin) * 1e-3,
                  plan.tasks(static_cast<int>(s->task)).device(), s->stream,
                  s == &from ? "" : ",\"bp\":\"e\"");
    json += event;
  }
  return json;
}

// The tasks on other devices whose data `task` reads: its SEND (for a RECV), and the
// producers of the data registers it consumes from another device.
std::vector<int64_t> CrossDeviceSources(const Plan& plan, int64_t task,
                                        const std::vector<int64_t>& peer_send) {
  const Task& t = plan.tasks(static_cast<int>(task));
  std::vector<int64_t> sources;
  if (peer_send[task] >= 0) sources.push_back(peer_send[task]);
  for (int64_t r : t.consumed_regsts()) {
    if (r < 0 || r >= plan.regsts_size()) continue;
    const Regst& regst = plan.regsts(static_cast<int>(r));
    if (regst.lag() != 0 || regst.tensor().dtype() == plan::DTYPE_UNSPECIFIED) continue;
    if (plan.tasks(static_cast<int>(regst.producer())).device() != t.device()) {
      sources.push_back(regst.producer());
    }
  }
  return sources;
}

// Flow arrows for data crossing devices: from each act of a producer to the same act of its
// consumer on another device (COPY reading another device's register), and from each SEND act
// to its RECV's. Acts of one task come in piece order, so the k-th meet the k-th.
std::string FlowArrows(const Plan& plan, const std::vector<TraceSpan>& spans, int64_t origin) {
  std::map<int64_t, std::vector<const TraceSpan*>> acts;  // task -> its spans in order
  for (const TraceSpan& s : spans) {
    if (s.task >= 0 && s.task < plan.tasks_size()) acts[s.task].push_back(&s);
  }
  const std::vector<int64_t> peer_send = PeerSends(plan);
  std::string json;
  int64_t id = 0;
  for (const auto& [task, mine] : acts) {
    for (int64_t source : CrossDeviceSources(plan, task, peer_send)) {
      const auto theirs = acts.find(source);
      if (theirs == acts.end()) continue;
      for (size_t k = 0; k < std::min(mine.size(), theirs->second.size()); ++k) {
        json += FlowArrow(plan, *theirs->second[k], *mine[k], id++, origin);
      }
    }
  }
  return json;
}

// Counter tracks: each device's live bytes, and one track per link of the device with its
// load.
std::string CounterEvents(const std::vector<MemorySample>& memory,
                          const std::vector<LinkSample>& links, int64_t origin) {
  std::string json;
  for (const MemorySample& m : memory) {
    char event[160];
    std::snprintf(event, sizeof(event),
                  ",\n{\"name\":\"memory\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,"
                  "\"args\":{\"live bytes\":%lld}}",
                  static_cast<double>(m.ns - origin) * 1e-3, m.device,
                  static_cast<long long>(m.bytes));
    json += event;
  }
  for (const LinkSample& l : links) {
    char event[192];
    std::snprintf(event, sizeof(event),
                  ",\n{\"name\":\"%s\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,"
                  "\"args\":{\"load\":%.4f}}",
                  l.link, static_cast<double>(l.ns - origin) * 1e-3, l.device, l.load);
    json += event;
  }
  return json;
}

}  // namespace

std::string ChromeTraceJson(const Plan& plan, const std::vector<TraceSpan>& spans,
                            const std::string& title, const std::vector<MemorySample>& memory,
                            const std::vector<LinkSample>& links) {
  const int64_t origin = TraceOrigin(spans);
  std::string json =
      "{\"traceEvents\":[\n{\"name\":\"" + Escape(title) + "\",\"ph\":\"M\",\"pid\":0,\"tid\":0}";
  json += DeviceProcesses(plan);
  json += SpanEvents(plan, spans, origin);
  json += FlowArrows(plan, spans, origin);
  json += CounterEvents(memory, links, origin);
  json += LinkThreads(links, origin);
  return json + "\n]}\n";
}

}  // namespace twinflow::plan
