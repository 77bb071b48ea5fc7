#include "engine/trace/trace_filter.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "engine/core/error.h"

namespace twinflow::trace {
namespace {

std::vector<std::string> Items(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int64_t DeviceNumber(const std::string& text, const std::string& item) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw InvalidArgumentError("--trace-devices: '" + item +
                               "' is not a device index or a range such as 0-7");
  }
  return std::stoll(text);
}

}  // namespace

bool TraceFilter::KeepsDevice(int64_t index) const {
  if (devices.empty()) return true;
  for (const auto& [first, last] : devices) {
    if (index >= first && index <= last) return true;
  }
  return false;
}

bool TraceFilter::KeepsKind(plan::TaskKind kind) const {
  return kinds.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

TraceFilter ParseTraceFilter(const std::string& devices, const std::string& kinds) {
  TraceFilter filter;
  for (const std::string& item : Items(devices)) {
    const size_t dash = item.find('-');
    const int64_t first = DeviceNumber(item.substr(0, dash), item);
    const int64_t last =
        dash == std::string::npos ? first : DeviceNumber(item.substr(dash + 1), item);
    if (last < first) throw InvalidArgumentError("--trace-devices: empty range '" + item + "'");
    filter.devices.emplace_back(first, last);
  }
  for (const std::string& item : Items(kinds)) {
    std::string upper = item;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    plan::TaskKind kind{};
    if (!plan::TaskKind_Parse(upper, &kind) || kind == plan::TASK_KIND_UNSPECIFIED) {
      throw InvalidArgumentError("--trace-kinds: '" + item +
                                 "' is not a task kind (compute, copy, send, recv, collective, "
                                 "acc, repeat, source, variable, sink, assign)");
    }
    filter.kinds.push_back(kind);
  }
  return filter;
}

}  // namespace twinflow::trace
