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
  CheckShape(tensor.shape(), expected, op, what);
}

void CheckShape(const Shape& shape, const Shape& expected, const std::string& op,
                const std::string& what) {
  if (shape != expected) {
    throw ShapeError(op + ": " + what + " has shape " + shape.ToString() + ", expected " +
                     expected.ToString());
  }
}

void CheckDType(const Tensor& tensor, DType dtype, const std::string& op, const std::string& what) {
  if (tensor.dtype() != dtype) {
    throw InvalidArgumentError(op + ": " + what + " is " + DTypeName(tensor.dtype()) +
                               ", expected " + DTypeName(dtype));
  }
}

void CheckIndexDType(const Tensor& tensor, const std::string& op, const std::string& what) {
  if (tensor.dtype() != DType::kI32 && tensor.dtype() != DType::kI64) {
    throw InvalidArgumentError(op + ": " + what + " is " + DTypeName(tensor.dtype()) +
                               ", expected i32 or i64");
  }
}

void CheckIndexValue(int64_t index, int64_t limit, const std::string& op, const std::string& what) {
  if (index < 0 || index >= limit) {
    throw InvalidArgumentError(op + ": " + what + " " + std::to_string(index) +
                               " is out of range [0, " + std::to_string(limit) + ")");
  }
}

void CheckMapsInput(const KernelContext& ctx, int inputs, const std::string& op) {
  CheckArity(ctx, inputs, 1, op);
  CheckDType(*ctx.outputs[0], ctx.inputs[0]->dtype(), op, "output");
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), op, "output");
}

void CheckGradOfElementwise(const KernelContext& ctx, const std::string& op) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  CheckDType(*ctx.inputs[1], dy.dtype(), op, "forward input");
  CheckDType(*ctx.outputs[0], dy.dtype(), op, "output");
  CheckShape(*ctx.inputs[1], dy.shape(), op, "forward input");
  CheckShape(*ctx.outputs[0], dy.shape(), op, "output");
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
  const std::optional<Shape> out = BroadcastShapes(a, b);
  if (!out) {
    throw ShapeError(op + ": shapes " + a.ToString() + " and " + b.ToString() +
                     " do not broadcast");
  }
  return *out;
}

int KernelAxis(int64_t axis, int rank, const std::string& op) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(op + ": axis " + std::to_string(axis) +
                               " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

AxisView ViewAround(const Shape& shape, int axis) {
  AxisView view;
  for (int d = 0; d < shape.rank(); ++d) {
    (d < axis ? view.outer : d == axis ? view.n : view.inner) *= shape[d];
  }
  return view;
}

const Shape& LogicalInputShape(const KernelContext& ctx, size_t i) {
  return i < ctx.input_logical_shapes.size() ? ctx.input_logical_shapes[i] : ctx.inputs[i]->shape();
}

Range InputRange(const KernelContext& ctx, size_t i, int axis) {
  if (i < ctx.input_regions.size() && axis < ctx.input_regions[i].rank()) {
    return ctx.input_regions[i].ranges[axis];
  }
  return Range{0, ctx.inputs[i]->shape()[axis]};
}

Range OutputRange(const KernelContext& ctx, size_t i, int axis) {
  if (i < ctx.output_regions.size() && axis < ctx.output_regions[i].rank()) {
    return ctx.output_regions[i].ranges[axis];
  }
  return Range{0, ctx.outputs[i]->shape()[axis]};
}

std::vector<bool> ReducedAxes(const Attrs& attrs, int rank, const std::string& op) {
  std::vector<bool> reduced(rank, !attrs.Has("axes"));
  if (!attrs.Has("axes")) return reduced;
  for (int64_t axis : attrs.GetInts("axes")) reduced[KernelAxis(axis, rank, op)] = true;
  return reduced;
}

Shape ReducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    if (!reduced[d]) {
      dims.push_back(in[d]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return Shape(std::move(dims));
}

double ScalarValue(const Tensor& tensor, const std::string& op, const std::string& what) {
  if (tensor.numel() != 1) {
    throw ShapeError(op + ": " + what + " has shape " + tensor.shape().ToString());
  }
  return tensor.GetDouble(0);
}

void RegisterCpu(KernelRegistry& registry, const std::string& op,
                 std::initializer_list<DType> dtypes, const Kernel& kernel) {
  for (DType dtype : dtypes) registry.Register(KernelKey{op, DeviceType::kCpu, dtype}, kernel);
}

}  // namespace twinflow::kernels
