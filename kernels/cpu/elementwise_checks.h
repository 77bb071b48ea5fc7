#pragma once
// Argument checks and broadcast setup of the elementwise kernels (add, sub, mul, div, bias_add,
// bias_add_grad, reduce_sum_like, broadcast_like), shared by the CPU kernels and the CUDA host
// side so both devices accept the same tensors and throw the same errors.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// A binary op with numpy broadcasting: checks dtypes and the output's broadcast shape; returns
// the strides of input 0 and input 1 when walking the output.
std::vector<std::vector<int64_t>> CheckBinary(const KernelContext& ctx, const std::string& name);
// bias_add(x, bias [x.shape[axis]]): checks and returns the (normalised) axis.
int CheckBiasAdd(const KernelContext& ctx);
// bias_add_grad(dy) -> [dy.shape[axis]]: checks and returns the (normalised) axis.
int CheckBiasAddGrad(const KernelContext& ctx);
// reduce_sum_like(dy, like) -> like's shape: returns the output's strides when walking dy.
std::vector<int64_t> CheckReduceSumLike(const KernelContext& ctx);
// broadcast_like(x, like) -> like's shape: returns x's strides when walking the output.
std::vector<int64_t> CheckBroadcastLike(const KernelContext& ctx);

}  // namespace twinflow::kernels
