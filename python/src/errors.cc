// Engine errors become Python exceptions of one class per kind: the argument-like kinds
// subclass ValueError, the run-time ones RuntimeError (the original design notes' error
// model).
#include "engine/core/error.h"
#include "python/src/bindings.h"

namespace twinflow::python {

void BindErrors(py::module_& m) {
  struct Kind {
    ErrorKind kind;
    const char* name;
    PyObject* base;
  };
  const Kind kinds[] = {{ErrorKind::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
                        {ErrorKind::kShape, "ShapeError", PyExc_ValueError},
                        {ErrorKind::kSbp, "SbpError", PyExc_ValueError},
                        {ErrorKind::kPlan, "PlanError", PyExc_RuntimeError},
                        {ErrorKind::kComm, "CommError", PyExc_RuntimeError},
                        {ErrorKind::kTimeout, "TimeoutError", PyExc_RuntimeError},
                        {ErrorKind::kOutOfMemory, "OutOfMemoryError", PyExc_RuntimeError},
                        {ErrorKind::kDevice, "DeviceError", PyExc_RuntimeError},
                        {ErrorKind::kNumerics, "NumericsError", PyExc_ArithmeticError}};
  // The classes live as long as the interpreter (the module holds them); the translator finds
  // them by kind.
  static PyObject* classes[std::size(kinds)];
  for (const Kind& k : kinds) {
    const std::string qualified = std::string("twinflow._C.") + k.name;
    PyObject* cls = PyErr_NewException(qualified.c_str(), k.base, nullptr);
    classes[static_cast<int>(k.kind)] = cls;
    m.add_object(k.name, py::handle(cls));
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(classes[static_cast<int>(e.kind())], e.message().c_str());
    }
  });
}

}  // namespace twinflow::python
