// The graph-writing half of the API: a GraphBuilder behind a handle of integer tensor ids.
// The Python modules (python/twinflow/nn) call it while a tw.Graph's build() runs; every op is
// checked as it is added, so errors name the op the user just wrote.
#include <pybind11/stl.h>

#include <optional>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/optimizer.h"
#include "engine/ops/attention.h"
#include "engine/ops/builtin_ops.h"
#include "engine/ops/softmax_ops.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/nd_sbp.h"
#include "models/hf_config.h"
#include "models/pins.h"
#include "models/training.h"
#include "python/src/bindings.h"

namespace twinflow::python {
namespace {

// Python values as op attributes: bool, int, float, str, or a list of ints.
Attrs ToAttrs(const py::dict& values, const std::string& what) {
  Attrs attrs;
  for (const auto& [key, value] : values) {
    const std::string name = py::str(key);
    if (py::isinstance<py::bool_>(value)) {
      attrs.Set(name, value.cast<bool>());
    } else if (py::isinstance<py::int_>(value)) {
      attrs.Set(name, value.cast<int64_t>());
    } else if (py::isinstance<py::float_>(value)) {
      attrs.Set(name, value.cast<double>());
    } else if (py::isinstance<py::str>(value)) {
      attrs.Set(name, value.cast<std::string>());
    } else if (py::isinstance<py::sequence>(value)) {
      std::vector<int64_t> ints;
      for (const py::handle item : value.cast<py::sequence>()) {
        if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
          throw InvalidArgumentError(what + ": attribute '" + name + "' must be a list of ints");
        }
        ints.push_back(item.cast<int64_t>());
      }
      attrs.Set(name, std::move(ints));
    } else {
      throw InvalidArgumentError(what + ": attribute '" + name + "' has unsupported type " +
                                 std::string(py::str(value.get_type().attr("__name__"))));
    }
  }
  return attrs;
}

class Builder {
 public:
  explicit Builder(const std::string& placement)
      : registry_(std::make_shared<const graph::OpRegistry>(ops::BuiltinOps())),
        builder_(*registry_, sbp::ParsePlacement(placement)) {}

  void SetPlacement(const std::string& text) { builder_.SetPlacement(sbp::ParsePlacement(text)); }
  std::string Placement() const { return builder_.placement().ToString(); }
  // set_stage: ops added from now on belong to pipeline stage `stage`, on `placement`.
  void SetStage(int32_t stage, const std::string& placement) {
    builder_.SetStage(stage, sbp::ParsePlacement(placement));
  }
  int32_t Stage() const { return builder_.stage(); }

  int64_t Input(const std::string& name, const std::vector<int64_t>& shape,
                const std::string& dtype) {
    return builder_.Input(name, Shape(shape), ParseDType(dtype));
  }
  int64_t Variable(const std::string& name, const std::vector<int64_t>& shape,
                   const std::string& dtype, const py::dict& init) {
    return builder_.Variable(name, Shape(shape), ParseDType(dtype), ToAttrs(init, name));
  }
  std::vector<int64_t> Add(const std::string& type, const std::vector<int64_t>& inputs,
                           const py::dict& attrs, const std::string& name) {
    CheckTensors(inputs, name.empty() ? type : name);
    const std::vector<graph::TensorId> ids(inputs.begin(), inputs.end());
    const std::vector<graph::TensorId> out =
        builder_.Add(type, ids, ToAttrs(attrs, name.empty() ? type : name), name);
    return {out.begin(), out.end()};
  }
  // `free_axes`: mesh axes left to the search (a strategy degree written auto).
  void Pin(int64_t tensor, const std::string& nd_sbp, const std::vector<int>& free_axes) {
    CheckTensors({tensor}, "pin");
    builder_.Pin(tensor, sbp::ParseNdSbp(nd_sbp), free_axes);
  }
  std::vector<int64_t> ShapeOf(int64_t tensor) const {
    CheckTensors({tensor}, "shape");
    return builder_.meta(tensor).shape.dims();
  }
  std::string DTypeOf(int64_t tensor) const {
    CheckTensors({tensor}, "dtype");
    return DTypeName(builder_.meta(tensor).dtype);
  }
  std::string NameOf(int64_t tensor) const {
    CheckTensors({tensor}, "name");
    return builder_.graph().tensor(tensor).name;
  }
  int64_t CrossEntropy(int64_t logits, int64_t labels, bool class_split) {
    CheckTensors({logits, labels}, "cross_entropy");
    return ops::SparseSoftmaxCrossEntropy(builder_, logits, labels, class_split);
  }
  int64_t Attention(int64_t q, int64_t k, int64_t v, int64_t heads, const std::string& name,
                    const std::string& kind, int64_t kv_heads) {
    CheckTensors({q, k, v}, name);
    return ops::CausalSelfAttention(builder_, q, k, v, heads, name, ops::ParseAttentionKind(kind),
                                    kv_heads);
  }

  // Mixed precision while the forward pass is written (GraphBuilder::SetAutocast): a dtype
  // name, or None for off.
  void SetAutocast(const std::optional<std::string>& dtype) {
    builder_.SetAutocast(dtype ? std::optional<DType>(ParseDType(*dtype)) : std::nullopt);
  }

  int64_t OpCount() const { return static_cast<int64_t>(builder_.graph().ops().size()); }

  // Training: the mean loss, autograd for `parameters` and the optimizer (FinishModel).
  // Otherwise the graph as written, fetching `outputs`.
  // `recompute`: [first, end) op id ranges, one per module run with recomputation.
  // `strategy` on `devices`: the graph's strategy text, for its precision and gradient
  // reduction (the Python layer pins the rest itself).
  Model Finish(const std::vector<int64_t>& outputs, const std::vector<int64_t>& parameters,
               const std::vector<std::string>& feeds, const std::string& optimizer,
               int64_t micro_batches, const std::string& schedule,
               const std::vector<std::pair<int64_t, int64_t>>& recompute,
               const std::string& strategy, int64_t devices) {
    CheckTensors(outputs, "outputs");
    CheckTensors(parameters, "parameters");
    if (micro_batches < 1) throw InvalidArgumentError("micro_batches must be positive");
    parallel::Strategy given = parallel::ParseStrategy(strategy);
    if (!given.automatic) given.Resolve(devices);
    models::BuildOptions options;
    options.strategy.micro_batches = micro_batches;
    options.strategy.schedule = parallel::ParseStrategy("schedule=" + schedule).schedule;
    options.strategy.precision = given.precision;
    options.strategy.grad_reduce = given.grad_reduce;
    options.training = !optimizer.empty();
    Model model;
    model.registry = registry_;
    model.training = options.training;
    if (options.training) {
      if (outputs.size() != 1) throw InvalidArgumentError("a training graph returns one loss");
      options.optimizer = graph::ParseOptimizer(optimizer);
      std::vector<std::vector<graph::OpId>> segments;
      models::LayerOpsFinder finder(builder_);
      for (const auto& [first, end] : recompute) {
        segments.push_back(finder.Ops(first, end));
        if (segments.back().empty()) segments.pop_back();
      }
      options.strategy.recompute =
          segments.empty() ? parallel::Recompute::kNone : parallel::Recompute::kFull;
      model.built = models::FinishModel(
          builder_, outputs[0], {parameters.begin(), parameters.end()}, feeds, options, segments);
      models::PinWideGradientSums(builder_, given);  // FinishModel's strategy has no dp
      models::PinShardedOptimizerState(builder_, given);
      model.built.graph = builder_.graph();
      model.fetches = {model.built.loss};
    } else {
      model.built.graph = builder_.graph();
      model.built.parameters = {parameters.begin(), parameters.end()};
      model.built.feeds = feeds;
      model.built.strategy = options.strategy;
      model.fetches = {outputs.begin(), outputs.end()};
    }
    return model;
  }

 private:
  void CheckTensors(const std::vector<int64_t>& ids, const std::string& what) const {
    const int64_t count = static_cast<int64_t>(builder_.graph().tensors().size());
    for (int64_t id : ids) {
      if (id < 0 || id >= count) {
        throw InvalidArgumentError(what + ": tensor id " + std::to_string(id) +
                                   " does not belong to this graph");
      }
    }
  }

  std::shared_ptr<const graph::OpRegistry> registry_;
  graph::GraphBuilder builder_;
};

// An int entry of a model's config, when given, into `field`.
void ReadConfig(const py::dict& config, const char* key, int64_t& field) {
  if (config.contains(key)) field = config[key].cast<int64_t>();
}

// A decoder's config: the family's default, a preset or a Hugging Face config.json, then the
// sizes given.
models::GptConfig GptConfigFrom(models::DecoderFamily family, const py::dict& config) {
  if (config.contains("preset") && config.contains("hf_config")) {
    throw InvalidArgumentError("preset and hf_config both set the sizes; give one");
  }
  models::GptConfig c =
      config.contains("hf_config")
          ? models::ReadHfConfig(config["hf_config"].cast<std::string>(), family)
          : models::DecoderConfig(
                family, config.contains("preset") ? config["preset"].cast<std::string>() : "");
  for (const auto& [key, field] : {std::pair<const char*, int64_t*>{"layers", &c.layers},
                                   {"hidden", &c.hidden},
                                   {"heads", &c.heads},
                                   {"kv_heads", &c.kv_heads},
                                   {"ffn", &c.ffn},
                                   {"sequence", &c.sequence},
                                   {"vocab", &c.vocab},
                                   {"batch", &c.batch}}) {
    ReadConfig(config, key, *field);
  }
  if (config.contains("attention")) {
    c.attention = ops::ParseAttentionKind(config["attention"].cast<std::string>());
  }
  return c;
}

models::MlpConfig MlpConfigFrom(const py::dict& config) {
  models::MlpConfig c;
  if (config.contains("widths")) c.widths = config["widths"].cast<std::vector<int64_t>>();
  ReadConfig(config, "batch", c.batch);
  return c;
}

// The batch (samples per step) the builder of model `name` uses for `config`.
int64_t BuiltinBatch(const std::string& name, const py::dict& config) {
  if (name == "mlp") return MlpConfigFrom(config).batch;
  return GptConfigFrom(models::ParseDecoderFamily(name), config).batch;
}

// What the tuner reads of model `name` under `config` (planner::TunedModel): (batch, layers,
// decoder, fused attention, attention given, recompute= changes it).
py::tuple BuiltinExtent(const std::string& name, const py::dict& config) {
  if (name == "mlp") {
    return py::make_tuple(MlpConfigFrom(config).batch, 0, false, false, false, true);
  }
  const models::GptConfig c = GptConfigFrom(models::ParseDecoderFamily(name), config);
  return py::make_tuple(c.batch, c.layers, true, c.attention == ops::AttentionKind::kFused,
                        config.contains("attention"), true);
}

// One of the models the CLI builds (mlp, gpt or llama), from a config dict of its sizes.
Model BuiltinModel(const std::string& name, const py::dict& config, const std::string& strategy,
                   int64_t devices, const std::optional<std::string>& optimizer, uint64_t seed) {
  Model model;
  model.registry = std::make_shared<const graph::OpRegistry>(ops::BuiltinOps());
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = devices;
  // None: the model's own default (models::DefaultOptimizer); "": inference.
  options.training = !optimizer || !optimizer->empty();
  if (optimizer && options.training) options.optimizer = graph::ParseOptimizer(*optimizer);
  options.seed = seed;
  if (config.contains("device")) {
    options.device = ParseDeviceType(config["device"].cast<std::string>());
  }
  if (name == "mlp") {
    model.built = models::BuildMlp(*model.registry, MlpConfigFrom(config), options);
  } else {
    model.built = models::BuildGpt(
        *model.registry, GptConfigFrom(models::ParseDecoderFamily(name), config), options);
  }
  model.training = options.training;
  model.fetches = {model.built.loss};
  return model;
}

void BindModel(py::module_& m) {
  py::class_<Model>(m, "Model")
      .def_property_readonly("training", [](const Model& model) { return model.training; })
      .def_property_readonly("optimizer",
                             [](const Model& model) { return models::OptimizerLabel(model.built); })
      .def_property_readonly("ops",
                             [](const Model& model) { return model.built.graph.ops().size(); })
      .def_property_readonly("feeds", [](const Model& model) { return model.built.feeds; })
      .def_property_readonly("fetch_names",
                             [](const Model& model) {
                               std::vector<std::string> names;
                               for (graph::TensorId t : model.fetches) {
                                 names.push_back(model.built.graph.tensor(t).name);
                               }
                               return names;
                             })
      .def_property_readonly("micro_batches",
                             [](const Model& model) { return model.built.strategy.micro_batches; })
      .def_property_readonly("strategy",
                             [](const Model& model) { return model.built.strategy.ToString(); });
}

void BindBuilder(py::module_& m) {
  py::class_<Builder>(m, "GraphBuilder")
      .def(py::init<const std::string&>(), py::arg("placement"))
      .def_property("placement", &Builder::Placement, &Builder::SetPlacement)
      .def_property_readonly("stage", &Builder::Stage)
      .def("set_stage", &Builder::SetStage, py::arg("stage"), py::arg("placement"))
      .def("input", &Builder::Input, py::arg("name"), py::arg("shape"), py::arg("dtype"))
      .def("variable", &Builder::Variable, py::arg("name"), py::arg("shape"), py::arg("dtype"),
           py::arg("init"))
      .def("add", &Builder::Add, py::arg("type"), py::arg("inputs"), py::arg("attrs") = py::dict(),
           py::arg("name") = "")
      .def("pin", &Builder::Pin, py::arg("tensor"), py::arg("nd_sbp"),
           py::arg("free_axes") = std::vector<int>{})
      .def("shape", &Builder::ShapeOf)
      .def("dtype", &Builder::DTypeOf)
      .def("name", &Builder::NameOf)
      .def("cross_entropy", &Builder::CrossEntropy, py::arg("logits"), py::arg("labels"),
           py::arg("class_split"))
      .def("attention", &Builder::Attention, py::arg("q"), py::arg("k"), py::arg("v"),
           py::arg("heads"), py::arg("name"), py::arg("kind") = "unfused", py::arg("kv_heads") = 0)
      .def("finish", &Builder::Finish, py::arg("outputs"), py::arg("parameters"), py::arg("feeds"),
           py::arg("optimizer"), py::arg("micro_batches"), py::arg("schedule"),
           py::arg("recompute") = std::vector<std::pair<int64_t, int64_t>>{},
           py::arg("strategy") = "auto", py::arg("devices") = 1)
      .def("set_autocast", &Builder::SetAutocast, py::arg("dtype"))
      .def_property_readonly("op_count", &Builder::OpCount);
}

}  // namespace

void BindGraph(py::module_& m) {
  BindModel(m);
  BindBuilder(m);
  m.def("builtin_batch", &BuiltinBatch, py::arg("name"), py::arg("config"));
  m.def("builtin_extent", &BuiltinExtent, py::arg("name"), py::arg("config"));
  // The optimizer text as the engine reads it back (InvalidArgumentError naming a bad field).
  m.def("parse_optimizer",
        [](const std::string& text) { return graph::OptimizerText(graph::ParseOptimizer(text)); });
  m.def("builtin_model", &BuiltinModel, py::arg("name"), py::arg("config"), py::arg("strategy"),
        py::arg("devices"), py::arg("optimizer") = py::none(), py::arg("seed") = 1);
  m.def("check_placement",
        [](const std::string& text) { return sbp::ParsePlacement(text).ToString(); });
  m.def("check_nd_sbp", [](const std::string& text) { return sbp::ParseNdSbp(text).ToString(); });
}

}  // namespace twinflow::python
