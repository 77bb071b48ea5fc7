#include "kernels/cpu/kernel_helpers.h"

#include <algorithm>

namespace twinflow::kernels {

void CheckArity(const KernelContext& ctx, int inputs, int outputs, const std::string& op) {
  if (static_cast<int>(ctx.inputs.size()) != inputs ||
      static_cast<int>(ctx.outputs.size()) != outputs) {
    throw ShapeError(op + ": expected " + std::to_string(inputs) + " inputs and " +
                     std::to_string(outputs) + " outputs, got " +
                     std::to_string(ctx.inputs.size()) + " and " +
                     std::to_string(ctx.outputs.size()));
  }
}

void CheckShape(const Tensor& tensor, const Shape& expected, const std::string& op,
                const std::string& what) {
  if (tensor.shape() != expected) {
    throw ShapeError(op + ": " + what + " has shape " + tensor.shape().ToString() + ", expected " +
                     expected.ToString());
  }
}

void CheckDType(const Tensor& tensor, DType dtype, const std::string& op, const std::string& what) {
  if (tensor.dtype() != dtype) {
    throw InvalidArgumentError(op + ": " + what + " is " + DTypeName(tensor.dtype()) +
                               ", expected " + DTypeName(dtype));
  }
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out, const std::string& op,
                                      const std::string& what) {
  if (in.rank() > out.rank()) {
    throw ShapeError(op + ": " + what + " of shape " + in.ToString() +
                     " has a higher rank than the output " + out.ToString());
  }
  const std::vector<int64_t> in_strides = in.Strides();
  std::vector<int64_t> strides(out.rank(), 0);
  const int offset = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) {
    if (in[d] == out[d + offset]) {
      strides[d + offset] = in[d] == 1 ? 0 : in_strides[d];
    } else if (in[d] != 1) {
      throw ShapeError(op + ": " + what + " of shape " + in.ToString() + " does not broadcast to " +
                       out.ToString());
    }
  }
  return strides;
}

Shape BroadcastShape(const Shape& a, const Shape& b, const std::string& op) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(op + ": shapes " + a.ToString() + " and " + b.ToString() +
                       " do not broadcast");
    }
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

int KernelAxis(int64_t axis, int rank, const std::string& op) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(op + ": axis " + std::to_string(axis) +
                               " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

void RegisterCpu(KernelRegistry& registry, const std::string& op,
                 std::initializer_list<DType> dtypes, const Kernel& kernel) {
  for (DType dtype : dtypes) registry.Register(KernelKey{op, DeviceType::kCpu, dtype}, kernel);
}

}  // namespace twinflow::kernels
