#pragma once
// Reference distribute / assemble: the ground truth every boxing plan, op rule and runtime is
// checked against.
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {

// The physical tensors of `logical` under `layout`, by parallel index. Partial axes get a
// random asymmetric decomposition (never value/n per device) drawn from rng, so that a wrong
// rule cannot pass by coincidence: for sum, random parts that add up to the value; for max
// (min), one random device per element holds the value and the others hold smaller (larger)
// values.
std::vector<Tensor> Distribute(const Tensor& logical, const Layout& layout, Rng& rng);

// The logical tensor from its physical tensors: splits are concatenated, partials reduced with
// their op, broadcast replicas must agree bit for bit (else SbpError naming the devices), and
// each physical shape must match the layout (else ShapeError naming the device).
Tensor Assemble(const std::vector<Tensor>& physical, const Shape& logical_shape,
                const Layout& layout);

}  // namespace twinflow::sbp
