// twinflow._C: the engine under the Python package (python/twinflow). Everything the package
// does goes through these bindings; the Python side holds the nn/optim API on top.
#include "python/src/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "twinflow's engine: graph building, compilation, execution and simulation";
  twinflow::python::BindErrors(m);
  twinflow::python::BindGraph(m);
  twinflow::python::BindProgram(m);
  twinflow::python::BindRunner(m);
  twinflow::python::BindSimulate(m);
  twinflow::python::BindStrategy(m);
  twinflow::python::BindTune(m);
}
