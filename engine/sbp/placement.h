#pragma once
// Placement: a device type, an ordered list of global device ids and a hierarchy (mesh shape)
// whose product is the device count. Text form: "cpu:0-3 [2,2]", "cuda:0,2,4-5 [2,2]"; without
// a hierarchy the mesh is 1-D: "cpu:0-3" is "cpu:0-3 [4]".
//
// Devices are addressed by their parallel index (position in the list); the mesh coordinate of
// parallel index i is i in row-major order over the hierarchy.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_type.h"
#include "engine/core/shape.h"

namespace twinflow::sbp {

using twinflow::DeviceType;
using twinflow::DeviceTypeName;

struct DeviceId {
  DeviceType type = DeviceType::kCpu;
  int64_t index = 0;
  std::string ToString() const;  // "cpu:3"
  auto operator<=>(const DeviceId& other) const = default;
};

// The most axes a device mesh may have. Real strategies use up to four (data, tensor,
// pipeline, context); each axis multiplies the boxing search's layouts (boxing_graph.h).
constexpr int kMaxMeshRank = 8;

class Placement {
 public:
  Placement() = default;
  // Throws SbpError on an empty or duplicated device list, a negative id, or a hierarchy whose
  // product differs from the device count.
  Placement(DeviceType type, std::vector<int64_t> device_ids, Shape hierarchy);
  Placement(DeviceType type, std::vector<int64_t> device_ids);  // 1-D hierarchy

  DeviceType device_type() const { return type_; }
  const std::vector<int64_t>& device_ids() const { return *device_ids_; }
  const Shape& hierarchy() const { return hierarchy_; }
  int64_t size() const { return static_cast<int64_t>(device_ids_->size()); }
  // Whether the ids rise with the parallel index (cpu:0-7, not cpu:3,1,2,0): then the devices
  // of any id range are one run of parallel indices, found by binary search.
  bool ids_ascend() const { return ids_ascend_; }
  DeviceId device(int64_t parallel_index) const { return {type_, (*device_ids_)[parallel_index]}; }
  std::optional<int64_t> ParallelIndexOf(const DeviceId& device) const;

  std::vector<int64_t> MeshCoord(int64_t parallel_index) const;
  int64_t ParallelIndex(const std::vector<int64_t>& mesh_coord) const;
  // The devices that differ only in their coordinate on mesh_axis, one group per combination
  // of the other coordinates; each group lists parallel indices in axis order. Groups are
  // ordered by the parallel index of their first member.
  std::vector<std::vector<int64_t>> AxisGroups(int mesh_axis) const;

  std::string ToString() const;  // "cpu:0-3 [2,2]": runs of consecutive ids are compressed
  bool operator==(const Placement& other) const;

 private:
  static const std::shared_ptr<const std::vector<int64_t>>& NoIds();

  DeviceType type_ = DeviceType::kCpu;
  // Shared by copies: a placement travels with every layout and boxing step, a thousand ids
  // each at cluster scale, and never changes once made.
  std::shared_ptr<const std::vector<int64_t>> device_ids_ = NoIds();
  bool ids_ascend_ = true;
  Shape hierarchy_;
};

// Parses the text form above. Throws SbpError naming the malformed part.
Placement ParsePlacement(std::string_view text);

}  // namespace twinflow::sbp
