#pragma once
// The identity of a COMPUTE task's kernel call for timing tables: op type, attributes and
// physical input tensors, e.g. "matmul|transpose_b=1|f32[512,784];f32[784,2048]". Two tasks
// with the same key run the same kernel on the same shapes, so they take the same time.
#include <string>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

std::string KernelKey(const Task& task);

}  // namespace twinflow::plan
