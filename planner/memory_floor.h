#pragma once
// A floor under a model's memory per device, from its graph alone (no search, no lowering):
// what tune uses to drop a strategy that cannot fit before compiling and simulating it.
#include <cstdint>
#include <map>
#include <vector>

#include "engine/graph/op_registry.h"
#include "engine/parallel/strategy.h"
#include "models/model.h"

namespace twinflow::planner {

// What the floor is made of, read once from a model's graph; the micro-batches and the
// schedule only weigh it (MemoryFloor), so models alike in the rest share it.
struct MemoryProfile {
  // Bytes of variables (parameters and optimizer state) by device. A variable pinned on every
  // mesh axis is counted in its pinned layout, slice by slice; any other as if split evenly over
  // its devices (the leanest any layout could make it), so it holds whatever the search chooses.
  std::map<sbp::DeviceId, int64_t> variable_bytes;
  // Activations kept for the backward pass: outputs of per-micro-batch forward ops that a
  // backward op on the same devices reads (with recomputation, the segments' inputs), in bytes
  // of one micro-batch (the graph holds one) times the copies their producers' allowed layouts
  // force (replicated mesh axes), by the devices and pipeline stage producing them.
  struct Kept {
    std::vector<sbp::DeviceId> devices;
    int32_t stage = 0;
    double bytes = 0;
  };
  std::vector<Kept> kept;
  // By devices: the most bytes of one recomputed segment's outputs the backward pass reads, of
  // one micro-batch (live together while the segment's gradients run).
  std::map<std::vector<sbp::DeviceId>, double> recomputed;
  // By devices: bytes of the per-micro-batch values that once-a-step ops read (the weight
  // gradients), each summed over the step's micro-batches, when there are several, in an
  // accumulator (an ACC's output register: a slot of its own all step) as large as the value.
  std::map<std::vector<sbp::DeviceId>, double> accumulated;
  int64_t micro_batches = 1;  // the model's: its micro-batch is the step's batch over these
};

MemoryProfile ProfileMemory(const models::BuiltModel& model, const graph::OpRegistry& registry);

// At least the arena of the busiest device of every Plan compiled from the model under
// `strategy` (its pipeline degree, chunks, micro-batches and schedule). Variables live in the
// arena all step; a kept activation's register has slots for the micro-batches its stage runs
// ahead (compiler::MicroBatchesAhead), each at least its share of one micro-batch's tensor, and
// bytes of its own (it outlives its pass). The devices of a stage hold, on average, their
// variables and those slots (and, with recomputation, one segment's recomputed activations),
// and the busiest holds at least the average; with more than one micro-batch, also their
// accumulators, each at least an even share of its value. With more
// micro-batches than the profiled model's (a smaller micro-batch) a kept tensor is taken as
// shrinking in proportion, at most what it does; with fewer, the activations are left out.
int64_t MemoryFloor(const MemoryProfile& profile, const parallel::Strategy& strategy);

// The most bytes of variables any one device holds (MemoryFloor without the activations).
int64_t VariableBytesFloor(const models::BuiltModel& model, const graph::OpRegistry& registry);

}  // namespace twinflow::planner
