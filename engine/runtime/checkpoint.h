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

// The checkpoint file `path` names: itself when it is a file (a kept older checkpoint,
// DIR/checkpoint-<step>.twck), else DIR/checkpoint.twck.
std::string CheckpointPath(const std::string& path);
// Saves `checkpoint` as DIR/checkpoint.twck, atomically (WriteFileAtomically: a kill at any
// moment leaves the previous file whole). With keep > 1 the file it replaces stays as
// DIR/checkpoint-<its step>.twck (a hard link: no copy), and of those only the keep - 1
// newest remain.
void SaveCheckpoint(const std::string& dir, const Checkpoint& checkpoint, int keep = 1);
// Reads and checks a checkpoint (CheckpointPath(path)) before returning it: every length
// against the file before allocating, the digest, finite values, a step count in [0, 2^53].
Checkpoint LoadCheckpoint(const std::string& path);
// The same checks on a checkpoint file's bytes; `origin` names it in errors.
Checkpoint ParseCheckpoint(const std::string& bytes, const std::string& origin);

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
