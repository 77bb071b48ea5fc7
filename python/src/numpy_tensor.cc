// numpy arrays in and out of engine Tensors, by copy: feeds are sliced by the runtime anyway,
// and a fetched array must outlive the run that produced it.
#include <cstring>

#include "engine/core/error.h"
#include "python/src/bindings.h"

namespace twinflow::python {
namespace {

py::dtype NumpyDType(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    default:
      throw InvalidArgumentError(what + ": dtype " + DTypeName(dtype) +
                                 " has no numpy counterpart here (use f32, f64, i32 or i64)");
  }
}

}  // namespace

Tensor ToTensor(const py::array& array, DType dtype, const std::string& what) {
  const char kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
    throw InvalidArgumentError(what + ": expected a numeric array, got dtype " +
                               std::string(py::str(array.dtype())));
  }
  if (!IsFloating(dtype) && kind == 'f') {
    throw InvalidArgumentError(what + ": expected integers (" + DTypeName(dtype) +
                               "), got floating-point dtype " +
                               std::string(py::str(array.dtype())));
  }
  // A C-ordered copy of the wanted dtype (numpy does the cast).
  const py::array cast = py::array::ensure(array.attr("astype")(NumpyDType(dtype, what)),
                                           py::array::c_style | py::array::forcecast);
  std::vector<int64_t> dims(cast.shape(), cast.shape() + cast.ndim());
  Tensor tensor(Shape(dims), dtype);
  std::memcpy(tensor.raw(), cast.data(), static_cast<size_t>(tensor.nbytes()));
  return tensor;
}

py::array ToNumpy(const Tensor& tensor) {
  const std::vector<int64_t>& dims = tensor.shape().dims();
  py::array array(NumpyDType(tensor.dtype(), "tensor"),
                  std::vector<py::ssize_t>(dims.begin(), dims.end()));
  std::memcpy(array.mutable_data(), tensor.raw(), static_cast<size_t>(tensor.nbytes()));
  return array;
}

}  // namespace twinflow::python
