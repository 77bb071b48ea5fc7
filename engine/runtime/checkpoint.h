#pragma once
// Checkpoints: model and optimizer state as logical tensors, so a checkpoint saved under one
// strategy loads under any other (each rank assembles or scatters its own parts through the
// Plan's variable bindings).
//
// One file, DIR/checkpoint.twck: the magic "TWCKPT01", the steps done, then each tensor (name,
// dtype, shape, bytes) in the Plan's variable order, then a 32-hex-digit digest of everything
// before it. It is written atomically (a temporary file renamed over the old one), so a failed
// save leaves the previous checkpoint whole; a truncated or altered file fails to load with an
// InvalidArgumentError naming the file and the problem.
#include <cstdint>
#include <map>
#include <string>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/threaded_executor.h"

namespace twinflow::runtime {

struct Checkpoint {
  int64_t steps = 0;                      // training steps done when it was taken
  std::map<std::string, Tensor> tensors;  // by variable name
};

std::string CheckpointPath(const std::string& dir);
void SaveCheckpoint(const std::string& dir, const Checkpoint& checkpoint);
Checkpoint LoadCheckpoint(const std::string& dir);

// Every variable of the Plan, assembled. With a transport this is collective: every rank calls
// it at the same point.
Checkpoint CaptureCheckpoint(const ThreadedExecutor& executor, const plan::Plan& plan,
                             int64_t steps);
// InvalidArgumentError naming the first variable of the Plan the checkpoint lacks or holds
// with another shape or dtype.
void CheckCheckpointFits(const plan::Plan& plan, const Checkpoint& checkpoint);
// Writes every variable of the Plan from `checkpoint` (checked as above first).
void RestoreCheckpoint(ThreadedExecutor& executor, const plan::Plan& plan,
                       const Checkpoint& checkpoint);

}  // namespace twinflow::runtime
