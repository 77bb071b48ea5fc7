#pragma once
// Recomputation: activation recomputation inside autograd (the contract is AddBackward's, in
// autograd.h). When the backward pass reaches a segment it emits the segment's forward ops
// again ("<op>/recompute"), their inputs from outside the segment passed through a
// `recompute_gate` on the segment's first output gradient, and the segment's gradient
// functions read the recomputed tensors.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/graph_builder.h"

namespace twinflow::graph {

class Recomputation {
 public:
  // `segments`: forward op ids (no source ops, none in two segments; InvalidArgumentError
  // naming the op otherwise); `order`: the forward ops in topological order. With `keep`, only
  // the recomputed ops of those names are emitted.
  Recomputation(const GraphBuilder& builder, const std::vector<std::vector<OpId>>& segments,
                const std::vector<OpId>& order, const std::set<std::string>* keep);

  // The node `op`'s gradient function is to read: `op` itself outside the segments; inside
  // one, `op` with its tensors replaced by their recomputations, the segment being emitted the
  // first time (gated on the first of `dy`).
  OpNode Reads(GraphBuilder& builder, const OpNode& op,
               const std::vector<std::optional<TensorId>>& dy);

  const std::vector<OpId>& emitted() const { return emitted_; }

 private:
  void Emit(GraphBuilder& builder, int segment, TensorId after);

  std::vector<std::vector<OpId>> segments_;  // in topological order
  std::vector<int> segment_of_;              // by op id, -1: none
  const std::set<std::string>* keep_;
  std::vector<std::map<TensorId, TensorId>> recomputed_;  // per segment: forward -> recomputed
  std::vector<bool> done_;
  std::vector<OpId> emitted_;
};

// The names of the `emitted` recomputed ops whose results `graph` reads (other than through
// recomputed ops nothing reads): what a second pass keeps.
std::set<std::string> ReadRecomputations(const LogicalGraph& graph,
                                         const std::vector<OpId>& emitted);

}  // namespace twinflow::graph
