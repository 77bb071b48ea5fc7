#pragma once
// Argument checks of the shape kernels (reshape, transpose, slice, slice_grad, concat), shared
// by the CPU kernels and the CUDA host side so both devices accept the same tensors and throw
// the same errors. These ops move bytes of any dtype, so their messages name the kernel.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/region.h"
#include "kernels/kernel.h"

namespace twinflow::kernels {

// InvalidArgumentError "kernel '<op>' got N inputs and M outputs" unless the counts match.
void CheckShapeOpArity(const KernelContext& ctx, size_t inputs, size_t outputs, const char* op);
// reshape(in) -> out: same element count and dtype.
void CheckReshape(const KernelContext& ctx);
// transpose(in) -> out: returns attr perm, checked to map in's shape to out's.
const std::vector<int64_t>& CheckTranspose(const KernelContext& ctx);
// The box of `shape` at `begin`, checked to lie inside `outer` (and, where the caller copies
// between two tensors without converting, `same_dtype`).
Region CheckBox(const std::vector<int64_t>& begin, const Shape& shape, const Shape& outer,
                const char* op, bool same_dtype = true);
// concat: one output and some inputs; returns attr axis, checked to be an axis of the output.
int64_t CheckConcatAxis(const KernelContext& ctx);
// concat: the inputs, `filled` long together on `axis`, must fill the output's axis.
void CheckConcatFilled(const KernelContext& ctx, int64_t axis, int64_t filled);

}  // namespace twinflow::kernels
