// Actor::WaitingOn: the one-line account of a stuck actor for watchdogs and deadlock reports.
#include "engine/runtime/actor.h"

namespace twinflow::runtime {

namespace {

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? separator : "") + parts[i];
  return text;
}

}  // namespace

std::string Actor::WaitingOn() const {
  const std::string name = TaskName(task_);
  if (finished()) return name + " has finished";
  if (busy_) return name + " is running act " + std::to_string(acts_);
  std::vector<std::string> waits;
  for (const auto& [id, in] : inputs_) {
    const std::string from = " (from " + TaskName(in.producer) + ")";
    if (!stopped_ && !in.order.empty()) {
      if (!Ready(in, acts_)) {
        waits.push_back("waits in its device's order for " + std::to_string(OrderNeeds(in, acts_)) +
                        " pieces of regst " + std::to_string(id) + from);
      }
    } else if (!stopped_) {
      const int64_t piece = NeededPiece(in, acts_);
      if (StartsInput(acts_) && piece >= 0 && !in.ready.count(piece)) {
        waits.push_back("waits for regst " + std::to_string(id) + " piece " +
                        std::to_string(piece) + from);
      }
    } else if (in.eord < 0) {
      waits.push_back("waits for Eord on regst " + std::to_string(id) + from);
    } else if (in.received < in.eord) {
      waits.push_back("waits for regst " + std::to_string(id) + " to announce its last " +
                      std::to_string(in.eord - in.received) + " pieces" + from);
    }
  }
  for (const auto& [id, o] : outputs_) {
    std::vector<std::string> consumers;
    for (int64_t consumer : o.consumers) consumers.push_back(TaskName(consumer));
    const std::string held = " (held by " + Join(consumers, ", ") + ")";
    if (!stopped_) {
      const int32_t slot = static_cast<int32_t>(o.produced % o.slots);
      if (StartsOutput(o, acts_) && o.holders[static_cast<size_t>(slot)] > 0) {
        waits.push_back("output regst " + std::to_string(id) + " has no free slot" + held);
      }
      continue;
    }
    int32_t outstanding = 0;
    for (int32_t holders : o.holders) outstanding += holders > 0 ? 1 : 0;
    if (outstanding > 0) {
      waits.push_back("waits for " + std::to_string(outstanding) +
                      (outstanding == 1 ? " slot" : " slots") + " of output regst " +
                      std::to_string(id) + " to come back" + held);
    }
  }
  if (waits.empty()) return name + " waits for nothing (it can act)";
  return name + " " + Join(waits, "; ");
}

}  // namespace twinflow::runtime
