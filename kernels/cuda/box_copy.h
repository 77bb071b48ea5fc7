#pragma once
// A region copy between two row-major tensors as one strided box copy (LaunchBoxCopy in
// shape_launch.h): what the CUDA device's region copies and the NCCL transport's packing of
// chunks both launch.
#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

// src[from] -> dst[to], elements of `dtype` on both sides; ShapeError naming both when the
// regions differ in shape, leave their tensors, or have more axes than kMaxDims.
BoxCopy MakeBox(const Shape& src, const Region& from, const Shape& dst, const Region& to,
                DType dtype);

}  // namespace twinflow::kernels::cuda
