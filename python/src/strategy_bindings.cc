// Strategy strings for Python graphs: the C++ parser (models/strategy.h) and Megatron's weight
// layouts (models/pins.h), so both front ends share one set of rules and errors.
#include <pybind11/stl.h>

#include "engine/core/error.h"
#include "models/pins.h"
#include "models/strategy.h"
#include "python/src/bindings.h"

namespace twinflow::python {

void BindStrategy(py::module_& m) {
  py::class_<models::Strategy>(m, "Strategy")
      .def_readonly("automatic", &models::Strategy::automatic)
      .def_readonly("dp", &models::Strategy::dp)
      .def_readonly("tp", &models::Strategy::tp)
      .def_readonly("pp", &models::Strategy::pp)
      .def_readonly("mb", &models::Strategy::micro_batches)
      .def_readonly("vp", &models::Strategy::virtual_stages)
      // "none", "selective" or "full".
      .def_property_readonly(
          "recompute", [](const models::Strategy& s) { return models::RecomputeName(s.recompute); })
      .def_readonly("overlap", &models::Strategy::overlap)
      // MiB of gradients per data-parallel all-reduce bucket (bucket=); 0: none.
      .def_readonly("bucket", &models::Strategy::bucket_mib)
      .def_property_readonly(
          "schedule", [](const models::Strategy& s) { return models::ScheduleName(s.schedule); })
      // The dtype the forward pass computes in: "f32", "bf16" or "f16" (precision=).
      .def_property_readonly("precision",
                             [](const models::Strategy& s) { return DTypeName(s.precision); })
      .def_property_readonly("devices", &models::Strategy::devices)
      // Pipeline stages the layers are cut into: pp, or pp * vp interleaved.
      .def_property_readonly("stages", &models::Strategy::stages)
      .def_property_readonly("default_devices", &models::Strategy::DefaultDevices)
      .def_property_readonly("infers_degree", &models::Strategy::InfersDegree)
      .def_property_readonly("searched_axes", &models::Strategy::SearchedAxes)
      .def("resolve", &models::Strategy::Resolve, py::arg("devices"))
      .def(
          "stage_placement",
          [](const models::Strategy& s, int64_t stage, int64_t devices) {
            if (stage < 0 || (!s.automatic && stage >= s.stages())) {
              throw InvalidArgumentError("stage " + std::to_string(stage) +
                                         " is beyond the strategy's " + s.StagesText() + " stages");
            }
            return s.StagePlacement(stage, devices).ToString();
          },
          py::arg("stage"), py::arg("devices"))
      .def("__str__", &models::Strategy::ToString);
  m.def("parse_strategy", &models::ParseStrategy, py::arg("text"));
  m.def(
      "weight_layout",
      [](const std::string& role) {
        return models::WeightLayout(models::ParseWeightRole(role)).ToString();
      },
      py::arg("role"));
}

}  // namespace twinflow::python
