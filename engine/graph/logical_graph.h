#pragma once
// LogicalGraph: the model as written for one big logical device. Ops consume and produce
// logical tensors; each op has a placement, each tensor may carry an NdSbp pin. Ids are dense
// indices, assigned in creation order, so iteration is deterministic.
//
// Tensor names: an op with one output names it like the op ("fc1"), so inputs and variables
// are found by their own names; an op with several outputs names them "<op name>/out<i>".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/attrs.h"
#include "engine/core/dtype.h"
#include "engine/core/shape.h"
#include "engine/sbp/nd_sbp.h"
#include "engine/sbp/placement.h"

namespace twinflow::graph {

using TensorId = int32_t;
using OpId = int32_t;

struct TensorMeta {
  Shape shape;
  DType dtype = DType::kF32;
  bool operator==(const TensorMeta& other) const = default;
  std::string ToString() const;  // "f32[8,16]"
};

// A layout the user (or a strategy) insists on for a tensor. Mesh axes listed in `free_axes`
// are left to the search (a strategy field written `auto`); on every other axis the producer
// writes `layout`. When the producer is a variable, or `binds_consumers` is set, every consumer
// on the same placement also reads it so: a pinned weight is never re-laid-out, so a
// tensor-parallel weight is never gathered (sbp_search.h). An input's pin binds its producer
// only (a reshape of the batch may need another layout).
struct TensorPin {
  sbp::NdSbp layout;
  std::vector<int> free_axes;  // ascending mesh axes
  bool binds_consumers = false;
  // A variable's pin only: an optimizer update may read a B axis of it split, which moves no
  // data (ZeRO's sharded update of a replicated parameter, models/pins.h).
  bool update_reads_shards = false;

  bool IsFree(int axis) const;
  // Whether `nd` honours the pin: equal to the layout on every axis that is not free, an axis
  // of one device (where every Sbp names the same data) read as B.
  bool Allows(const sbp::NdSbp& nd, const Shape& hierarchy) const;
  std::string ToString() const;  // "(S(0),B)", a free axis as "*": "(S(0),*)"
  bool operator==(const TensorPin& other) const = default;
};

struct TensorNode {
  TensorId id = -1;
  std::string name;
  TensorMeta meta;
  OpId producer = -1;
  int output_index = 0;
  std::optional<TensorPin> pin;
};

struct OpNode {
  OpId id = -1;
  std::string name;  // unique in the graph
  std::string type;
  Attrs attrs;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  sbp::Placement placement;
  // Its pipeline stage, given by whoever placed it (GraphBuilder::SetStage; a model's strategy
  // gives each layer's): the lowering reads it, and never guesses stages from placements.
  int32_t stage = 0;
  // A forward op's recomputation for the backward pass (recompute.cc marks it); the lowering
  // copies it into Task.recomputes, so nothing reads it from the name.
  bool recomputed = false;
  // A backward op that only weight gradients need, no activation gradient (autograd marks it):
  // a zero-bubble schedule runs these as a pass of their own (PASS_WEIGHT), after the input
  // gradients the previous stage waits for.
  bool weight_gradient = false;
};

class OpRegistry;

class LogicalGraph {
 public:
  // Appends an op whose outputs' metas are already known; returns its id. Names must be
  // unique (InvalidArgumentError otherwise). Used by GraphBuilder.
  OpId AddOp(std::string name, std::string type, Attrs attrs, std::vector<TensorId> inputs,
             const std::vector<TensorMeta>& outputs, sbp::Placement placement, int32_t stage = 0);
  // Throws SbpError (prefixed with the tensor and its producer) when the layout does not fit the
  // tensor's rank or the producer's hierarchy, or a free axis is out of range.
  void Pin(TensorId tensor, sbp::NdSbp nd_sbp, std::vector<int> free_axes = {},
           bool binds_consumers = false);
  void Pin(TensorId tensor, TensorPin pin);  // the same, every field of the pin given

  const std::vector<OpNode>& ops() const { return ops_; }
  const std::vector<TensorNode>& tensors() const { return tensors_; }
  const OpNode& op(OpId id) const;
  const TensorNode& tensor(TensorId id) const;
  std::optional<OpId> FindOp(const std::string& name) const;
  std::optional<TensorId> FindTensor(const std::string& name) const;
  // Ops consuming `tensor`, in op id order.
  std::vector<OpId> Consumers(TensorId tensor) const;

  // Ops from `first` on belong to the backward pass (autograd marks it; -1: none). The lowering
  // keeps what the two passes read apart, so that pipeline slots follow each pass's pace.
  void MarkBackwardFrom(OpId first) { backward_begin_ = first; }
  void MarkRecomputed(OpId op);
  void MarkWeightGradient(OpId op);
  bool IsBackward(OpId op) const { return backward_begin_ >= 0 && op >= backward_begin_; }

  // Every op after the producers of its inputs; ties in id order. Throws InvalidArgumentError
  // naming an op on a cycle.
  std::vector<OpId> TopologicalOrder() const;

  // Checks the whole graph and throws the first problem, naming the op: dangling or unknown
  // tensor ids, cycles, op types the registry lacks, input counts, shapes or dtypes that do not
  // match what the op infers, pins that do not fit the tensor or the op's placement, and
  // placements of different device types feeding each other without a copy.
  void Validate(const OpRegistry& registry) const;

 private:
  std::vector<OpNode> ops_;
  std::vector<TensorNode> tensors_;
  OpId backward_begin_ = -1;
  // Name lookups and consumer lists, kept as ops are added (graphs reach ~10^5 ops).
  std::map<std::string, OpId> op_index_;
  std::map<std::string, TensorId> tensor_index_;
  std::map<TensorId, std::vector<OpId>> consumers_;
};

}  // namespace twinflow::graph
