// Strategy strings for Python graphs: the C++ parser (engine/parallel/strategy.h) and Megatron's
// weight layouts (models/pins.h), so both front ends share one set of rules and errors.
#include <pybind11/stl.h>

#include "engine/core/error.h"
#include "engine/parallel/strategy.h"
#include "models/pins.h"
#include "python/src/bindings.h"

namespace twinflow::python {

void BindStrategy(py::module_& m) {
  py::class_<parallel::Strategy>(m, "Strategy")
      .def_readonly("automatic", &parallel::Strategy::automatic)
      .def_readonly("dp", &parallel::Strategy::dp)
      .def_readonly("tp", &parallel::Strategy::tp)
      .def_readonly("pp", &parallel::Strategy::pp)
      .def_readonly("mb", &parallel::Strategy::micro_batches)
      .def_readonly("vp", &parallel::Strategy::virtual_stages)
      // "none", "selective" or "full".
      .def_property_readonly(
          "recompute",
          [](const parallel::Strategy& s) { return parallel::RecomputeName(s.recompute); })
      .def_readonly("overlap", &parallel::Strategy::overlap)
      // MiB of gradients per data-parallel all-reduce bucket (bucket=); 0: none.
      .def_readonly("bucket", &parallel::Strategy::bucket_mib)
      .def_property_readonly(
          "schedule",
          [](const parallel::Strategy& s) { return parallel::ScheduleName(s.schedule); })
      // The dtype the forward pass computes in: "f32", "bf16" or "f16" (precision=).
      .def_property_readonly("precision",
                             [](const parallel::Strategy& s) { return DTypeName(s.precision); })
      .def_property_readonly("devices", &parallel::Strategy::devices)
      // Pipeline stages the layers are cut into: pp, or pp * vp interleaved.
      .def_property_readonly("stages", &parallel::Strategy::stages)
      .def_property_readonly("default_devices", &parallel::Strategy::DefaultDevices)
      .def_property_readonly("infers_degree", &parallel::Strategy::InfersDegree)
      .def_property_readonly("searched_axes", &parallel::Strategy::SearchedAxes)
      .def("resolve", &parallel::Strategy::Resolve, py::arg("devices"))
      .def(
          "stage_placement",
          [](const parallel::Strategy& s, int64_t stage, int64_t devices) {
            if (stage < 0 || (!s.automatic && stage >= s.stages())) {
              throw InvalidArgumentError("stage " + std::to_string(stage) +
                                         " is beyond the strategy's " + s.StagesText() + " stages");
            }
            return s.StagePlacement(stage, devices).ToString();
          },
          py::arg("stage"), py::arg("devices"))
      .def("__str__", &parallel::Strategy::ToString);
  m.def("parse_strategy", &parallel::ParseStrategy, py::arg("text"));
  m.def(
      "weight_layout",
      [](const std::string& role) {
        return models::WeightLayout(models::ParseWeightRole(role)).ToString();
      },
      py::arg("role"));
}

}  // namespace twinflow::python
