#pragma once
// PreparedTask: what the ThreadedExecutor needs to run one task, worked out and checked once
// before any thread starts: its data registers in op order, the kernel, attributes, regions
// and logical shapes of a COMPUTE or VARIABLE op, the local regions of a COPY's transfers, a
// SOURCE's feed part, a COLLECTIVE's group. A Plan that does not fit is a PlanError naming the
// task; a missing kernel is an InvalidArgumentError naming the task and the op.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/attrs.h"
#include "engine/core/reduce_op.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/plan/plan.pb.h"
#include "kernels/kernel.h"

namespace twinflow::runtime {

// One Transfer of a COPY task, in the coordinates of the source and destination slots.
struct SlotCopy {
  int64_t src_regst = 0;
  Region src;
  Region dst;
};

struct PreparedTask {
  const plan::Task* task = nullptr;
  std::vector<int64_t> inputs;   // consumed data registers, in op order
  std::vector<int64_t> outputs;  // produced data registers, in op order
  // COMPUTE and VARIABLE
  kernels::Kernel kernel;
  Attrs attrs;
  std::vector<Region> input_regions, output_regions;
  std::vector<Shape> input_logical, output_logical;
  // SOURCE: index into plan.feeds, and the region of one piece's logical tensor it holds
  int feed = -1;
  Region feed_region;
  // COPY
  std::vector<SlotCopy> copies;
  // SEND: the box of its one transfer, packed from the consumed slot into a buffer of
  // send_shape (copies[0] gives the regions)
  Shape send_shape;
  DType send_dtype = DType::kF32;
  // COLLECTIVE
  int group_size = 0;
  int local_members = 0;     // members on this task's rank
  bool spans_ranks = false;  // some member is on another rank: the transport takes it
  ReduceOp reduce_op = ReduceOp::kSum;
};

std::vector<PreparedTask> PrepareTasks(const plan::Plan& plan,
                                       const kernels::KernelRegistry& kernels);

// "task 'layer0/matmul@1'": how messages name a task.
std::string TaskName(const plan::Task& task);

}  // namespace twinflow::runtime
