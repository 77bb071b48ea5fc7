#include "engine/parallel/strategy.h"

#include <charconv>

#include "engine/core/error.h"

namespace twinflow::parallel {
namespace {

constexpr int64_t kMaxDegree = int64_t{1} << 20;  // keeps dp*tp*pp far from overflow

// An integer field in [least, kMaxDegree].
int64_t ParseInteger(const std::string& key, const std::string& value, int64_t least) {
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || number < least ||
      number > kMaxDegree) {
    throw InvalidArgumentError("strategy field '" + key + "' must be an integer in [" +
                               std::to_string(least) + ", " + std::to_string(kMaxDegree) +
                               "], got '" + value + "'");
  }
  return number;
}

int64_t ParsePositive(const std::string& key, const std::string& value) {
  return ParseInteger(key, value, 1);
}

// A degree field: a number, or `auto` where the field allows it.
void ParseDegree(const std::string& key, const std::string& value, int64_t& degree,
                 DegreeSource& source) {
  if (value == "auto") {
    if (key == "pp") {
      throw InvalidArgumentError(
          "strategy field 'pp' cannot be auto: the SBP search does not place pipeline stages; "
          "give pp=N");
    }
    source = DegreeSource::kSearched;
    return;
  }
  degree = ParsePositive(key, value);
  source = DegreeSource::kGiven;
}

// Megatron's names (--bf16, --fp16); the default is fp32.
DType ParsePrecision(const std::string& key, const std::string& value) {
  if (value == "fp32") return DType::kF32;
  if (value == "bf16") return DType::kBF16;
  if (value == "fp16") return DType::kF16;
  throw InvalidArgumentError("strategy field '" + key + "' must be fp32, bf16 or fp16, got '" +
                             value + "'");
}

const char* PrecisionName(DType dtype) {
  return dtype == DType::kBF16 ? "bf16" : dtype == DType::kF16 ? "fp16" : "fp32";
}

// ",precision=bf16" (and ",grad_reduce=bf16" when given); empty for fp32.
std::string PrecisionText(DType precision, DType grad_reduce) {
  if (precision == DType::kF32) return "";
  return std::string(",precision=") + PrecisionName(precision) +
         (grad_reduce == DType::kF32 ? ""
                                     : ",grad_reduce=" + std::string(PrecisionName(grad_reduce)));
}

void ParseField(const std::string& key, const std::string& value, Strategy& strategy) {
  if (key == "dp") {
    ParseDegree(key, value, strategy.dp, strategy.dp_source);
  } else if (key == "tp") {
    ParseDegree(key, value, strategy.tp, strategy.tp_source);
  } else if (key == "pp") {
    ParseDegree(key, value, strategy.pp, strategy.pp_source);
  } else if (key == "mb") {
    strategy.micro_batches = ParsePositive(key, value);
  } else if (key == "vp") {
    strategy.virtual_stages = ParsePositive(key, value);
  } else if (key == "schedule") {
    for (Schedule s : {Schedule::kGPipe, Schedule::kOneFOneB, Schedule::kZeroBubbleH1}) {
      if (value == ScheduleName(s)) {
        strategy.schedule = s;
        return;
      }
    }
    throw InvalidArgumentError("strategy field 'schedule' must be gpipe, 1f1b or zb-h1, got '" +
                               value + "'");
  } else if (key == "recompute") {
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      if (value == RecomputeName(r)) {
        strategy.recompute = r;
        return;
      }
    }
    throw InvalidArgumentError("strategy field 'recompute' must be none, selective or full, got '" +
                               value + "'");
  } else if (key == "overlap") {
    if (value != "on" && value != "off") {
      throw InvalidArgumentError("strategy field 'overlap' must be on or off, got '" + value + "'");
    }
    strategy.overlap = value == "on";
  } else if (key == "bucket") {
    strategy.bucket_mib = ParseInteger(key, value, 0);
  } else if (key == "precision") {
    strategy.precision = ParsePrecision(key, value);
  } else if (key == "grad_reduce") {
    strategy.grad_reduce = ParsePrecision(key, value);
  } else if (key == "sp") {
    if (value != "true" && value != "false") {
      throw InvalidArgumentError("strategy field 'sp' must be true or false, got '" + value + "'");
    }
    strategy.sequence_parallel = value == "true";
  } else if (key == "zero") {
    if (value == "2" || value == "3") {
      throw InvalidArgumentError("strategy field 'zero': stage " + value +
                                 " (sharded gradients, parameters) is not implemented yet; "
                                 "zero=1 shards the optimizer state");
    }
    if (value != "0" && value != "1") {
      throw InvalidArgumentError("strategy field 'zero' must be 0 or 1, got '" + value + "'");
    }
    strategy.zero = value == "1" ? ZeroStage::kOptimizerState : ZeroStage::kNone;
  }
}

constexpr const char* kFieldNames[kFieldCount] = {
    "dp",      "tp",     "pp",        "mb",          "vp", "schedule", "recompute",
    "overlap", "bucket", "precision", "grad_reduce", "sp", "zero"};

Field FieldOf(const std::string& key) {
  for (int f = 0; f < kFieldCount; ++f) {
    if (key == kFieldNames[f]) return static_cast<Field>(f);
  }
  std::string expected;
  for (int f = 0; f < kFieldCount; ++f) {
    expected += std::string(f == 0 ? "" : f + 1 == kFieldCount ? " or " : ", ") + kFieldNames[f];
  }
  throw InvalidArgumentError("unknown strategy field '" + key + "' (expected " + expected + ")");
}

}  // namespace

void CheckInterleaving(const Strategy& s) {
  if (s.virtual_stages == 1) return;
  const std::string vp = "strategy field 'vp=" + std::to_string(s.virtual_stages) + "'";
  if (s.pp < 2) throw InvalidArgumentError(vp + " interleaves pipeline stages: it needs pp > 1");
  if (s.schedule != Schedule::kOneFOneB) {
    throw InvalidArgumentError(vp +
                               " is the interleaved 1F1B schedule; it cannot go with "
                               "schedule=" +
                               ScheduleName(s.schedule));
  }
  if (s.micro_batches > 1 && s.micro_batches % s.pp != 0) {
    throw InvalidArgumentError(vp + " runs micro-batches in groups of pp=" + std::to_string(s.pp) +
                               ": mb=" + std::to_string(s.micro_batches) +
                               " must be a multiple of it");
  }
}

namespace {

bool Searched(DegreeSource source) { return source == DegreeSource::kSearched; }

std::string DegreeText(const char* key, int64_t degree, DegreeSource source) {
  return std::string(key) + "=" + (Searched(source) ? "auto" : std::to_string(degree));
}

std::string ZeroText(ZeroStage zero) {
  return zero == ZeroStage::kNone ? "" : ",zero=" + std::to_string(static_cast<int>(zero));
}

std::string RecomputeText(Recompute recompute) {
  return recompute == Recompute::kNone ? "" : std::string(",recompute=") + RecomputeName(recompute);
}

// Overlap, bucket and precision where they differ from their defaults.
std::string CommOptionsText(const Strategy& s) {
  return std::string(s.overlap ? "" : ",overlap=off") +
         (s.bucket_mib == kDefaultBucketMib ? "" : ",bucket=" + std::to_string(s.bucket_mib)) +
         PrecisionText(s.precision, s.grad_reduce);
}

}  // namespace

const char* FieldName(Field field) { return kFieldNames[static_cast<int>(field)]; }

const char* RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kNone:
      break;
  }
  return "none";
}

const char* ScheduleName(Schedule schedule) {  // schedule.h
  switch (schedule) {
    case Schedule::kGPipe:
      return "gpipe";
    case Schedule::kZeroBubbleH1:
      return "zb-h1";
    case Schedule::kOneFOneB:
      break;
  }
  return "1f1b";
}

std::string Strategy::ToString() const {
  if (automatic) return "auto" + (hierarchy.rank() ? " " + hierarchy.ToString() : "");
  return DegreeText("dp", dp, dp_source) + "," + DegreeText("tp", tp, tp_source) + "," +
         DegreeText("pp", pp, pp_source) + ",mb=" + std::to_string(micro_batches) +
         (virtual_stages > 1 ? ",vp=" + std::to_string(virtual_stages) : "") +
         ",schedule=" + ScheduleName(schedule) + RecomputeText(recompute) + CommOptionsText(*this) +
         (sequence_parallel ? ",sp=true" : "") + ZeroText(zero);
}

std::string Strategy::Compact() const {
  if (automatic) return ToString();
  return DegreeText("dp", dp, dp_source) + "," + DegreeText("tp", tp, tp_source) + "," +
         DegreeText("pp", pp, pp_source) + ",mb=" + std::to_string(micro_batches) +
         (pp > 1 ? std::string(",schedule=") + ScheduleName(schedule) : "") +
         (virtual_stages > 1 ? ",vp=" + std::to_string(virtual_stages) : "") +
         (sequence_parallel ? ",sp=true" : "") + ZeroText(zero) + RecomputeText(recompute) +
         CommOptionsText(*this);
}

std::string Strategy::StagesText() const {
  return (virtual_stages > 1 ? "pp*vp=" : "pp=") + std::to_string(stages());
}

std::optional<DType> Strategy::Autocast() const {
  if (precision == DType::kF32) return std::nullopt;
  return precision;
}

bool Strategy::InfersDegree() const {
  return !automatic && (dp_source != DegreeSource::kGiven || Searched(tp_source));
}

int64_t Strategy::DefaultDevices() const {
  if (automatic) return hierarchy.rank() ? hierarchy.numel() : 1;
  const int64_t known_dp = dp_source == DegreeSource::kGiven ? dp : 1;
  const int64_t known_tp = Searched(tp_source) ? 1 : tp;
  return known_dp * known_tp * pp;
}

void Strategy::Resolve(int64_t devices) {
  if (devices < 1) throw InvalidArgumentError("the number of devices must be positive");
  if (automatic) return CheckDevices(devices);
  // The one degree to infer: a dp not given, else a tp written auto (with dp omitted and tp
  // auto, dp is 1 and tp takes the devices).
  const bool dp_open = dp_source != DegreeSource::kGiven;
  const bool tp_open = Searched(tp_source);
  if (dp_open && tp_open) dp = 1;
  int64_t& open = tp_open ? tp : dp;
  const char* name = tp_open ? "tp" : "dp";
  if (dp_open || tp_open) {
    const int64_t rest = (tp_open ? dp : tp) * pp;
    if (devices % rest != 0) {
      throw InvalidArgumentError("cannot infer " + std::string(name) + ": " +
                                 std::to_string(devices) + " devices do not divide by " +
                                 (tp_open ? "dp*pp" : "tp*pp") + " = " + std::to_string(rest));
    }
    open = devices / rest;
  }
  CheckDevices(devices);
}

Strategy Strategy::Resolved(int64_t devices) const {
  Strategy copy = *this;
  copy.Resolve(devices);
  return copy;
}

std::vector<int> Strategy::SearchedAxes() const {
  std::vector<int> axes;
  if (automatic) return axes;
  if (Searched(dp_source)) axes.push_back(0);
  if (Searched(tp_source)) axes.push_back(1);
  return axes;
}

void Strategy::CheckDevices(int64_t devices) const {
  if (devices < 1) throw InvalidArgumentError("the number of devices must be positive");
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
  for (int64_t d = 0; d < dp * tp; ++d) ids.push_back(stage % pp * dp * tp + d);
  return sbp::Placement(type, ids, Shape{dp, tp});
}

Strategy ParseStrategy(const std::string& text) {
  Strategy strategy;
  if (text == "auto") {
    strategy.automatic = true;
    return strategy;
  }
  if (text.empty()) throw InvalidArgumentError("empty strategy (try dp=2,tp=2 or auto)");
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
    const Field field = FieldOf(key);
    if (strategy.Gives(field)) {
      throw InvalidArgumentError("strategy field '" + key + "' is given twice");
    }
    strategy.Give(field);
    ParseField(key, value, strategy);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (strategy.grad_reduce != DType::kF32 && strategy.grad_reduce != strategy.precision) {
    throw InvalidArgumentError(std::string("strategy field 'grad_reduce' must be fp32 or the "
                                           "precision (") +
                               PrecisionName(strategy.precision) + "), got " +
                               PrecisionName(strategy.grad_reduce));
  }
  CheckInterleaving(strategy);
  if (Searched(strategy.dp_source) && Searched(strategy.tp_source)) {
    throw InvalidArgumentError(
        "strategy fields dp and tp are both auto: give one of them, or use strategy auto");
  }
  return strategy;
}

}  // namespace twinflow::parallel
