#pragma once
// The pieces of the `twinflow._C` extension (one Bind* per file) and what they share: the
// model a Python graph (or a built-in builder) produced, and numpy <-> Tensor conversion.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/op_registry.h"
#include "models/model.h"

namespace twinflow::python {

namespace py = pybind11;

// A model ready to compile: its graph, what each step fetches and the registry its ops were
// checked against (kept alive with it).
struct Model {
  std::shared_ptr<const graph::OpRegistry> registry;
  models::BuiltModel built;
  std::vector<graph::TensorId> fetches;  // the loss when training, else the outputs
  bool training = true;
};

// `array` as a Tensor of `dtype` (cast like numpy's astype; floats into an integer tensor are
// refused). InvalidArgumentError naming `what` for unsupported dtypes.
Tensor ToTensor(const py::array& array, DType dtype, const std::string& what);
py::array ToNumpy(const Tensor& tensor);

void BindErrors(py::module_& m);
void BindGraph(py::module_& m);
void BindProgram(py::module_& m);
void BindRunner(py::module_& m);
void BindSimulate(py::module_& m);
void BindStrategy(py::module_& m);
void BindTune(py::module_& m);

}  // namespace twinflow::python
