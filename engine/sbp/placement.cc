#include "engine/sbp/placement.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <optional>
#include <set>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

// Guards against "cpu:0-999999999999" exhausting memory.
constexpr int64_t kMaxDevices = int64_t{1} << 20;

std::string IdsText(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

// The first id of `ids` that an earlier one repeats, or nothing. Ascending ids (almost every
// placement) need no set: the search makes placements by the thousand.
std::optional<int64_t> RepeatedId(const std::vector<int64_t>& ids) {
  if (std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end()) return {};
  std::set<int64_t> seen;
  for (int64_t id : ids) {
    if (!seen.insert(id).second) return id;
  }
  return {};
}

// `where_text` names the placement in messages (the parsed text, or the device list); made
// only for a message.
void CheckPlacement(DeviceType type, const std::vector<int64_t>& ids, const Shape& hierarchy,
                    const std::function<std::string()>& where_text) {
  if (ids.empty()) throw SbpError("placement " + where_text() + " lists no devices");
  if (const auto negative = std::find_if(ids.begin(), ids.end(), [](int64_t id) { return id < 0; });
      negative != ids.end()) {
    throw SbpError("negative device id " + std::to_string(*negative) + " in placement " +
                   where_text());
  }
  if (const std::optional<int64_t> twice = RepeatedId(ids)) {
    throw SbpError("device " + DeviceId{type, *twice}.ToString() + " appears twice in placement " +
                   where_text());
  }
  if (hierarchy.rank() == 0)
    throw SbpError("placement " + where_text() + " has an empty hierarchy");
  if (hierarchy.rank() > kMaxMeshRank) {
    throw SbpError("hierarchy " + hierarchy.ToString() + " of placement " + where_text() + " has " +
                   std::to_string(hierarchy.rank()) + " axes (at most " +
                   std::to_string(kMaxMeshRank) + ")");
  }
  int64_t product = 1;
  for (int64_t d : hierarchy.dims()) {
    if (d == 0) {
      throw SbpError("hierarchy " + hierarchy.ToString() + " of placement " + where_text() +
                     " has an extent of 0");
    }
    // Saturate: any product beyond kMaxDevices is wrong anyway.
    product = product > kMaxDevices / d ? kMaxDevices + 1 : product * d;
  }
  if (product != static_cast<int64_t>(ids.size())) {
    throw SbpError("hierarchy " + hierarchy.ToString() + " has " +
                   (product > kMaxDevices ? std::string("too many") : std::to_string(product)) +
                   " devices but the placement lists " + std::to_string(ids.size()) + " (in " +
                   where_text() + ")");
  }
}

// A minimal cursor over placement text that skips blanks between tokens.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  void SkipSpaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Done() {
    SkipSpaces();
    return pos_ >= text_.size();
  }
  char Peek() {
    SkipSpaces();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  std::string_view Word() {
    SkipSpaces();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  bool Number(int64_t* value) {
    SkipSpaces();
    const char* begin = text_.data() + pos_;
    const char* limit = text_.data() + text_.size();
    if (begin == limit || !std::isdigit(static_cast<unsigned char>(*begin))) return false;
    const auto [end, ec] = std::from_chars(begin, limit, *value);
    if (ec != std::errc()) return false;
    pos_ += end - begin;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string DeviceId::ToString() const {
  return std::string(DeviceTypeName(type)) + ":" + std::to_string(index);
}

Placement::Placement(DeviceType type, std::vector<int64_t> device_ids, Shape hierarchy)
    : type_(type),
      device_ids_(std::make_shared<const std::vector<int64_t>>(std::move(device_ids))),
      hierarchy_(std::move(hierarchy)) {
  CheckPlacement(type_, *device_ids_, hierarchy_, [this] {
    return std::string(DeviceTypeName(type_)) + ":" + IdsText(*device_ids_);
  });
  ids_ascend_ = std::adjacent_find(device_ids_->begin(), device_ids_->end(),
                                   std::greater_equal<>()) == device_ids_->end();
}

const std::shared_ptr<const std::vector<int64_t>>& Placement::NoIds() {
  static const auto* none = new std::shared_ptr<const std::vector<int64_t>>(
      std::make_shared<const std::vector<int64_t>>());
  return *none;
}

bool Placement::operator==(const Placement& other) const {
  return type_ == other.type_ && hierarchy_ == other.hierarchy_ &&
         (device_ids_ == other.device_ids_ || *device_ids_ == *other.device_ids_);
}

Placement::Placement(DeviceType type, std::vector<int64_t> device_ids)
    : Placement(type, device_ids, Shape{static_cast<int64_t>(device_ids.size())}) {}

std::optional<int64_t> Placement::ParallelIndexOf(const DeviceId& device) const {
  if (device.type != type_) return std::nullopt;
  for (int64_t i = 0; i < size(); ++i) {
    if ((*device_ids_)[i] == device.index) return i;
  }
  return std::nullopt;
}

std::vector<int64_t> Placement::MeshCoord(int64_t parallel_index) const {
  if (parallel_index < 0 || parallel_index >= size()) {
    throw SbpError("parallel index " + std::to_string(parallel_index) + " is outside placement " +
                   ToString());
  }
  std::vector<int64_t> coord(hierarchy_.rank());
  for (int axis = hierarchy_.rank() - 1; axis >= 0; --axis) {
    coord[axis] = parallel_index % hierarchy_[axis];
    parallel_index /= hierarchy_[axis];
  }
  return coord;
}

int64_t Placement::ParallelIndex(const std::vector<int64_t>& mesh_coord) const {
  const auto bad = [&] {
    std::string s = "[";
    for (size_t i = 0; i < mesh_coord.size(); ++i) {
      s += (i ? "," : "") + std::to_string(mesh_coord[i]);
    }
    return SbpError("mesh coordinate " + s + "] is outside placement " + ToString());
  };
  if (static_cast<int>(mesh_coord.size()) != hierarchy_.rank()) throw bad();
  int64_t index = 0;
  for (int axis = 0; axis < hierarchy_.rank(); ++axis) {
    if (mesh_coord[axis] < 0 || mesh_coord[axis] >= hierarchy_[axis]) throw bad();
    index = index * hierarchy_[axis] + mesh_coord[axis];
  }
  return index;
}

std::vector<std::vector<int64_t>> Placement::AxisGroups(int mesh_axis) const {
  if (mesh_axis < 0 || mesh_axis >= hierarchy_.rank()) {
    throw SbpError("mesh axis " + std::to_string(mesh_axis) + " is outside the hierarchy " +
                   hierarchy_.ToString() + " of placement " + ToString());
  }
  int64_t stride = 1;  // parallel-index distance between neighbours along mesh_axis
  for (int axis = mesh_axis + 1; axis < hierarchy_.rank(); ++axis) stride *= hierarchy_[axis];
  std::vector<std::vector<int64_t>> groups;
  for (int64_t first = 0; first < size(); ++first) {
    if ((first / stride) % hierarchy_[mesh_axis] != 0) continue;
    std::vector<int64_t>& group = groups.emplace_back();
    for (int64_t k = 0; k < hierarchy_[mesh_axis]; ++k) group.push_back(first + k * stride);
  }
  return groups;
}

std::string Placement::ToString() const {
  return std::string(DeviceTypeName(type_)) + ":" + IdsText(*device_ids_) + " " +
         hierarchy_.ToString();
}

Placement ParsePlacement(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  const auto malformed = [&](const std::string& why) {
    return SbpError("malformed placement " + quoted + ": " + why +
                    " (expected e.g. cpu:0-3 [2,2])");
  };
  Cursor cursor(text);
  const std::string_view type_name = cursor.Word();
  DeviceType type;
  try {
    type = ParseDeviceType(type_name);
  } catch (const InvalidArgumentError& e) {
    throw SbpError(e.message() + " in placement " + quoted);
  }
  if (!cursor.Eat(':')) throw malformed("missing ':' after the device type");
  std::vector<int64_t> ids;
  if (cursor.Done() || cursor.Peek() == '[') {
    throw SbpError("placement " + quoted + " lists no devices");
  }
  do {
    if (cursor.Peek() == '-') throw SbpError("negative device id in placement " + quoted);
    int64_t first = 0;
    if (!cursor.Number(&first)) throw malformed("expected a device id");
    int64_t last = first;
    if (cursor.Eat('-') && !cursor.Number(&last)) throw malformed("expected a range end");
    if (last < first) {
      throw SbpError("reversed device range " + std::to_string(first) + "-" + std::to_string(last) +
                     " in placement " + quoted);
    }
    if (last - first >= kMaxDevices - static_cast<int64_t>(ids.size())) {
      throw SbpError("placement " + quoted + " lists too many devices");
    }
    for (int64_t id = first; id <= last; ++id) ids.push_back(id);
  } while (cursor.Eat(','));
  std::vector<int64_t> dims;
  if (cursor.Eat('[')) {
    do {
      int64_t extent = 0;
      if (!cursor.Number(&extent)) throw malformed("expected a hierarchy extent");
      dims.push_back(extent);
    } while (cursor.Eat(','));
    if (!cursor.Eat(']')) throw malformed("expected ']' to close the hierarchy");
  } else {
    dims.push_back(static_cast<int64_t>(ids.size()));
  }
  if (!cursor.Done()) throw malformed("unexpected text after the placement");
  CheckPlacement(type, ids, Shape(dims), [&quoted] { return quoted; });
  return Placement(type, std::move(ids), Shape(std::move(dims)));
}

}  // namespace twinflow::sbp
