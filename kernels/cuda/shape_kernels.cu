// Device code of the shape ops: one thread per element of the box, offsets from the strides.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/shape_launch.h"

namespace twinflow::kernels::cuda {
namespace {

template <typename E>
__global__ void BoxCopyKernel(const E* src, E* dst, BoxCopy b, int64_t n) {
  TF_GRID_LOOP(i, n) {
    int64_t from = 0, to = 0;
    BoxOffsets(b, i, &from, &to);
    dst[to] = src[from];
  }
}

template <typename E>
void Launch(const void* src, void* dst, const BoxCopy& box, int64_t n, cudaStream_t stream) {
  BoxCopyKernel<E><<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const E*>(src),
                                                          static_cast<E*>(dst), box, n);
  TF_CUDA_CHECK_LAUNCH("BoxCopyKernel");
}

}  // namespace

void LaunchBoxCopy(const void* src, void* dst, const BoxCopy& box, int64_t element_bytes,
                   cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < box.rank; ++d) n *= box.extent[d];
  if (n == 0) return;
  switch (element_bytes) {
    case 1:
      return Launch<uint8_t>(src, dst, box, n, stream);
    case 2:
      return Launch<uint16_t>(src, dst, box, n, stream);
    case 4:
      return Launch<uint32_t>(src, dst, box, n, stream);
    default:
      return Launch<uint64_t>(src, dst, box, n, stream);
  }
}

}  // namespace twinflow::kernels::cuda
