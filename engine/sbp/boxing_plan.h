#pragma once
// BoxingPlan: the primitive steps that turn a tensor laid out as `src` into `dst`. Each step
// moves the tensor from one Layout to the next; the last step's `to` is `dst`. An empty plan
// means the layouts hold identical physical data already.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/sbp/cost_model.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {

enum class BoxingStepKind {
  kAllGather,      // S(gather_axis) -> B along mesh_axis: concatenate the group's pieces
  kAllReduce,      // P(op) -> B along mesh_axis
  kReduceScatter,  // P(op) -> S(scatter_axis) along mesh_axis: reduce, keep one balanced part
  kAllToAll,       // S(gather_axis) -> S(scatter_axis) along mesh_axis
  kBroadcast,      // root's whole tensor to every device of `to`
  kLocalSlice,     // along mesh_axis, each device derives its new piece from its own: B -> S,
                   // B -> P, S -> P(sum), or any change on a mesh axis of size 1
  kSendRecv,       // point-to-point copies of slice intersections, `from` and `to` non-partial
};
// The collective's name (CollectiveKindName), "slice" or "send_recv".
const char* BoxingStepKindName(BoxingStepKind kind);
// The collective a step runs, nullopt for kLocalSlice and kSendRecv.
std::optional<CollectiveKind> StepCollective(BoxingStepKind kind);

// One copy of a logical region from a device of `from` to a device of `to` (parallel indices).
struct RegionTransfer {
  int64_t src_index = 0;
  int64_t dst_index = 0;
  Region region;  // in logical coordinates
  int64_t bytes = 0;
};

struct BoxingStep {
  BoxingStepKind kind = BoxingStepKind::kLocalSlice;
  Layout from;
  Layout to;
  int mesh_axis = -1;                        // collectives and local slices
  std::vector<std::vector<int64_t>> groups;  // collectives: parallel indices, ring order
  int gather_axis = -1;                      // all_gather, all_to_all: tensor axis joined
  int scatter_axis = -1;                     // reduce_scatter, all_to_all: tensor axis cut
  ReduceOp reduce_op = ReduceOp::kSum;       // all_reduce, reduce_scatter
  int64_t root = -1;                         // broadcast: parallel index in `from`
  std::vector<RegionTransfer> transfers;     // send_recv (same-device ones included)
  LinkBytes link_bytes;                      // bytes over each link class
  double time = 0;                           // seconds, from the CostModel

  int64_t cross_device_bytes() const;  // bytes over every link class but kSameDevice
};

struct BoxingPlan {
  Shape shape;
  DType dtype = DType::kF32;
  Layout src;
  Layout dst;
  std::vector<BoxingStep> steps;

  double time() const;           // sum of the steps' times
  LinkBytes link_bytes() const;  // summed over steps
  int64_t cross_device_bytes() const;
  // A readable table: one line per step with its groups, bytes per link class and time.
  std::string ToString() const;
};

}  // namespace twinflow::sbp
