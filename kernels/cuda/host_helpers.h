#pragma once
// Host-side helpers of the CUDA kernel files (.cc): the env of a context, registration, the
// launch structs built from shapes, and stream-ordered copies, fills and scratch memory.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_helpers.h"
#include "kernels/cuda/cuda_env.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

// The context's env; InvalidArgumentError naming the op when a CUDA kernel is called without.
const CudaEnv& Env(const KernelContext& ctx, const std::string& op);

// Registers `kernel` for (op, cuda, dtype) for each dtype.
void RegisterCuda(KernelRegistry& registry, const std::string& op,
                  std::initializer_list<DType> dtypes, const Kernel& kernel);

// ShapeError naming the op when a tensor has more than kMaxDims axes.
void CheckRank(const Shape& shape, const std::string& op);
// The device address of an f32 scalar input (a gradient factor, a loss scale): InvalidArgument
// or ShapeError "<op>: <what> ..." unless `t` is f32 with one element.
const float* F32ScalarOn(const Tensor& t, const std::string& op, const std::string& what);

// Operands walked over `out`: each element of `strides` from BroadcastStrides (or the output's
// own strides). Marks the space contiguous when every operand has out's row-major strides.
Strides3 MakeStrides3(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                      const std::string& op);

// The reduction of `in` over the axes with reduced[d] true (ForEachReduced's order).
ReduceSpace MakeReduceSpace(const Shape& in, const std::vector<bool>& reduced,
                            const std::string& op);

// The logical indices of output `which` of the context (region and logical shape; whole when
// absent). ShapeError naming the op when the region does not fit.
LogicalIndexer MakeLogicalIndexer(const KernelContext& ctx, size_t which, const std::string& op);

// Stream-ordered byte copy and zero fill; nothing is enqueued for zero bytes.
void CopyAsync(const CudaEnv& env, void* dst, const void* src, int64_t bytes);
void ZeroAsync(const CudaEnv& env, void* dst, int64_t bytes);

// Device memory that lives until the work enqueued before its destruction has run
// (cudaMallocAsync / cudaFreeAsync on the env's stream): no synchronisation.
class Scratch {
 public:
  Scratch(const CudaEnv& env, int64_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return ptr_; }

 private:
  const CudaEnv& env_;
  void* ptr_ = nullptr;
};

}  // namespace twinflow::kernels::cuda
