#include "models/strategy.h"

#include <charconv>
#include <set>

#include "engine/core/error.h"

namespace twinflow::models {
namespace {

constexpr int64_t kMaxDegree = int64_t{1} << 20;  // keeps dp*tp*pp far from overflow

int64_t ParsePositive(const std::string& key, const std::string& value) {
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || number < 1 ||
      number > kMaxDegree) {
    throw InvalidArgumentError("strategy field '" + key + "' must be an integer in [1, " +
                               std::to_string(kMaxDegree) + "], got '" + value + "'");
  }
  return number;
}

}  // namespace

const char* ScheduleName(Schedule schedule) {
  return schedule == Schedule::kGPipe ? "gpipe" : "1f1b";
}

std::string Strategy::ToString() const {
  if (automatic) return "auto" + (hierarchy.rank() ? " " + hierarchy.ToString() : "");
  return "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) +
         ",mb=" + std::to_string(micro_batches) + ",schedule=" + ScheduleName(schedule) +
         (recompute ? ",recompute=full" : "");
}

void Strategy::CheckDevices(int64_t devices) const {
  if (devices < 1) throw InvalidArgumentError("--devices must be positive");
  if (automatic) {
    if (hierarchy.rank() && hierarchy.numel() != devices) {
      throw InvalidArgumentError("hierarchy " + hierarchy.ToString() + " has " +
                                 std::to_string(hierarchy.numel()) + " devices but there are " +
                                 std::to_string(devices));
    }
    return;
  }
  if (this->devices() != devices) {
    throw InvalidArgumentError("strategy " + ToString() +
                               " needs dp*tp*pp = " + std::to_string(this->devices()) +
                               " devices but there are " + std::to_string(devices));
  }
}

sbp::Placement Strategy::StagePlacement(int64_t stage, int64_t devices, DeviceType type) const {
  if (automatic) {
    std::vector<int64_t> ids;
    for (int64_t d = 0; d < devices; ++d) ids.push_back(d);
    return sbp::Placement(type, ids, hierarchy.rank() ? hierarchy : Shape{devices});
  }
  std::vector<int64_t> ids;
  for (int64_t d = 0; d < dp * tp; ++d) ids.push_back(stage * dp * tp + d);
  return sbp::Placement(type, ids, Shape{dp, tp});
}

Strategy ParseStrategy(const std::string& text) {
  Strategy strategy;
  if (text == "auto") {
    strategy.automatic = true;
    return strategy;
  }
  if (text.empty()) throw InvalidArgumentError("empty strategy (try dp=2,tp=2 or auto)");
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    const size_t eq = item.find('=');
    if (item.empty()) {
      throw InvalidArgumentError("empty strategy field in '" + text + "' (a stray comma?)");
    }
    if (eq == std::string::npos) {
      throw InvalidArgumentError("strategy field '" + item + "' is not key=value");
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!seen.insert(key).second) {
      throw InvalidArgumentError("strategy field '" + key + "' is given twice");
    }
    if (key == "dp") {
      strategy.dp = ParsePositive(key, value);
    } else if (key == "tp") {
      strategy.tp = ParsePositive(key, value);
    } else if (key == "pp") {
      strategy.pp = ParsePositive(key, value);
    } else if (key == "mb") {
      strategy.micro_batches = ParsePositive(key, value);
    } else if (key == "schedule") {
      if (value == "gpipe") {
        strategy.schedule = Schedule::kGPipe;
      } else if (value == "1f1b") {
        strategy.schedule = Schedule::kOneFOneB;
      } else {
        throw InvalidArgumentError("strategy field 'schedule' must be gpipe or 1f1b, got '" +
                                   value + "'");
      }
    } else if (key == "recompute") {
      if (value != "full" && value != "none") {
        throw InvalidArgumentError("strategy field 'recompute' must be full or none, got '" +
                                   value + "'");
      }
      strategy.recompute = value == "full";
    } else {
      throw InvalidArgumentError("unknown strategy field '" + key +
                                 "' (expected dp, tp, pp, mb, schedule or recompute)");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return strategy;
}

}  // namespace twinflow::models
