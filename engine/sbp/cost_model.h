#pragma once
// CostModel: prices communication and compute in seconds. The boxing
// planner, the compiler's SBP search and the simulator all price work through this one
// interface, so what the search prefers is what the simulator predicts.
#include <cstdint>
#include <map>
#include <vector>

#include "engine/core/collective_kind.h"
#include "engine/core/dtype.h"
#include "engine/sbp/placement.h"

namespace twinflow::sbp {

enum class LinkClass { kSameDevice, kIntraNode, kInterNode, kHostDevice };
const char* LinkClassName(LinkClass link);  // "local", "intra-node", "inter-node", "host-device"

using LinkBytes = std::map<LinkClass, int64_t>;  // bytes that cross each class of link

struct Transfer {
  DeviceId src;
  DeviceId dst;
  int64_t bytes = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  virtual LinkClass Classify(const DeviceId& a, const DeviceId& b) const = 0;

  // One collective over `group` (in ring order; group[0] is a broadcast's root). `bytes` is S
  // in the formulas: the per-device buffer of all_reduce, reduce_scatter and all_to_all, the
  // per-device output of all_gather, the payload of broadcast. Zero bytes cost zero.
  virtual double CollectiveTime(CollectiveKind kind, const std::vector<DeviceId>& group,
                                int64_t bytes) const = 0;
  virtual LinkBytes CollectiveLinkBytes(CollectiveKind kind, const std::vector<DeviceId>& group,
                                        int64_t bytes) const = 0;

  // Costs are unchanged when every device id shifts by a multiple of this period (0: never).
  // Callers may then price a boxing between shifted placements once and reuse it, as the SBP
  // search does across the identical stages of a pipeline.
  virtual int64_t TranslationPeriod() const { return 0; }

  // One kernel doing `flops` floating-point operations and moving `bytes` to and from memory.
  virtual double ComputeTime(double flops, int64_t bytes, DType dtype) const = 0;

  // One point-to-point message; same-device messages and empty ones are free.
  virtual double MessageTime(const DeviceId& src, const DeviceId& dst, int64_t bytes) const = 0;
  // A lower bound on the time `count` messages of `bytes` in all take sent one after another,
  // each between any two distinct devices.
  virtual double FastestMessagesTime(int64_t count, int64_t bytes) const = 0;

  // Devices whose index / NodeSize() agree share a node, and MessageTime prices every message
  // between two nodes alike, affine in its bytes, so `count` such messages of `bytes` in all
  // take InterNodeTime(count, bytes) sent one after another; within a node it prices alike
  // every message between devices of the same two types; CollectiveTime and
  // CollectiveLinkBytes of a group depend only on its size, bytes, members' types and which
  // members share a node (so a group moved by whole nodes prices alike). 0: no such
  // structure. Lets the boxing search price a redistribution among thousands of devices
  // without visiting each of its millions of cross-node pieces, or each of a mesh's groups.
  virtual int64_t NodeSize() const = 0;
  virtual double InterNodeTime(int64_t count, int64_t bytes) const = 0;

  // A set of concurrent point-to-point transfers: each device sends its messages one after
  // another, and receives them one after another, so the set takes the largest of those sums.
  double TransferTime(const std::vector<Transfer>& transfers) const;
  LinkBytes TransferLinkBytes(const std::vector<Transfer>& transfers) const;
};

}  // namespace twinflow::sbp
