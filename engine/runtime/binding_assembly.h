#pragma once
// Moving a binding's logical value to and from its parts (plan.proto, Binding): fetches and
// variables are assembled from the parts' slots, variables are scattered into them. Parts are
// combined in part order, so a partial value's reduction is the same in every run.
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::runtime {

// The logical tensor: starts at zero (at the reduction's identity for a partial binding), then
// each contributing part is copied (reduce "") or reduced into its region. parts[i] is part
// i's value; it may be null for a part that does not contribute. PlanError when a part does
// not fit.
Tensor AssembleBinding(const plan::Binding& binding, const std::vector<const Tensor*>& parts);

// Writes `value` into every part (replicas too). For a partial binding the first contributing
// part takes the value and the other contributing parts the identity of a sum (max and min
// parts all take the value), so assembling gives `value` back. ShapeError when `value` does not
// have the binding's logical shape and dtype.
void ScatterBinding(const plan::Binding& binding, const Tensor& value,
                    const std::vector<Tensor*>& parts);

// A step's fetch made of several pieces: concatenated along axis 0 (scalars become a vector).
Tensor StackPieces(const std::vector<Tensor>& pieces);

}  // namespace twinflow::runtime
