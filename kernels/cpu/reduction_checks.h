#pragma once
// Argument checks and reduced-axes setup of the reduction kernels (reduce_sum, reduce_mean,
// reduce_max, broadcast_reduced_like, reduce_max_grad), shared by the CPU kernels and the CUDA
// host side so both devices accept the same tensors, reduce the same axes and throw the same
// errors.
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// reduce_<op>(x) -> y: returns which axes of x are reduced (attrs axes, keepdims).
std::vector<bool> CheckReduce(const KernelContext& ctx, const std::string& op);
// 1 / the number of logical elements reduce_mean averages: a device holding a split of a
// reduced axis contributes its share of the mean, and the partial sums add up to it.
double ReduceMeanScale(const KernelContext& ctx, const std::vector<bool>& reduced);
// broadcast_reduced_like(dy, like) -> like's shape: returns the reduced axes of like.
std::vector<bool> CheckBroadcastReducedLike(const KernelContext& ctx);
// reduce_max_grad(x, y, dy) -> dx: returns the reduced axes of x.
std::vector<bool> CheckReduceMaxGrad(const KernelContext& ctx);

}  // namespace twinflow::kernels
