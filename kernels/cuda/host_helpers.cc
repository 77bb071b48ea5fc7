#include "kernels/cuda/host_helpers.h"

#include "kernels/cuda/cuda_check.h"

namespace twinflow::kernels::cuda {

const CudaEnv& Env(const KernelContext& ctx, const std::string& op) {
  if (ctx.cuda == nullptr) {
    throw InvalidArgumentError(op + ": a cuda kernel was called without a CudaEnv");
  }
  return *ctx.cuda;
}

void RegisterCuda(KernelRegistry& registry, const std::string& op,
                  std::initializer_list<DType> dtypes, const Kernel& kernel) {
  for (DType dtype : dtypes) registry.Register(KernelKey{op, DeviceType::kCuda, dtype}, kernel);
}

void CheckRank(const Shape& shape, const std::string& op) {
  if (shape.rank() > kMaxDims) {
    throw ShapeError(op + ": shape " + shape.ToString() + " has more than " +
                     std::to_string(kMaxDims) + " axes, the cuda kernels' limit");
  }
}

Strides3 MakeStrides3(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                      const std::string& op) {
  CheckRank(out, op);
  Strides3 s;
  s.rank = out.rank();
  const std::vector<int64_t> own = out.Strides();
  bool contiguous = true;
  for (int d = 0; d < s.rank; ++d) {
    s.extent[d] = out[d];
    for (size_t k = 0; k < strides.size() && k < 3; ++k) {
      s.stride[k][d] = strides[k][d];
      // A stride on an axis of extent 1 is never used, so it cannot break contiguity.
      if (out[d] != 1 && strides[k][d] != own[d]) contiguous = false;
    }
  }
  s.contiguous = contiguous;
  return s;
}

ReduceSpace MakeReduceSpace(const Shape& in, const std::vector<bool>& reduced,
                            const std::string& op) {
  CheckRank(in, op);
  ReduceSpace r;
  const std::vector<int64_t> strides = in.Strides();
  r.outputs = 1;
  r.count = 1;
  for (int d = 0; d < in.rank(); ++d) {
    if (reduced[d]) {
      r.reduced_extent[r.reduced_rank] = in[d];
      r.reduced_stride[r.reduced_rank++] = strides[d];
      r.count *= in[d];
    } else {
      r.kept_extent[r.kept_rank] = in[d];
      r.kept_stride[r.kept_rank++] = strides[d];
      r.outputs *= in[d];
    }
  }
  return r;
}

LogicalIndexer MakeLogicalIndexer(const KernelContext& ctx, size_t which, const std::string& op) {
  const Shape& physical = ctx.outputs[which]->shape();
  CheckRank(physical, op);
  const Region region =
      which < ctx.output_regions.size() ? ctx.output_regions[which] : Region::Full(physical);
  const Shape logical =
      which < ctx.output_logical_shapes.size() ? ctx.output_logical_shapes[which] : physical;
  if (region.shape() != physical || region.rank() != logical.rank() ||
      !Region::Full(logical).Contains(region)) {
    throw ShapeError(op + ": physical " + physical.ToString() + " at " + region.ToString() +
                     " does not fit logical " + logical.ToString());
  }
  LogicalIndexer ix;
  ix.rank = physical.rank();
  const std::vector<int64_t> strides = logical.Strides();
  for (int d = 0; d < ix.rank; ++d) {
    ix.extent[d] = physical[d];
    ix.begin[d] = region.ranges[d].begin;
    ix.logical_stride[d] = strides[d];
  }
  return ix;
}

void CopyAsync(const CudaEnv& env, void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0 || dst == src) return;
  TF_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, env.stream));
}

void ZeroAsync(const CudaEnv& env, void* dst, int64_t bytes) {
  if (bytes <= 0) return;
  TF_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), env.stream));
}

Scratch::Scratch(const CudaEnv& env, int64_t bytes) : env_(env) {
  if (bytes > 0) TF_CUDA_CHECK(cudaMallocAsync(&ptr_, static_cast<size_t>(bytes), env.stream));
}

Scratch::~Scratch() {
  if (ptr_) cudaFreeAsync(ptr_, env_.stream);  // a destructor must not throw
}

const float* F32ScalarOn(const Tensor& t, const std::string& op, const std::string& what) {
  CheckDType(t, DType::kF32, op, what);
  if (t.numel() != 1) throw ShapeError(op + ": " + what + " has shape " + t.shape().ToString());
  return t.data<float>();
}

}  // namespace twinflow::kernels::cuda
