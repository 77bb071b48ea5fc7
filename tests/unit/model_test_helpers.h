#pragma once
// Shared by the model builder tests (models_*_test.cc): small MLP and GPT configurations, build
// options from a strategy text, and lookups of pins, ops and parameter counts in a BuiltModel.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "models/model.h"

namespace twinflow::models::model_test_helpers {

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename F>
std::string InvalidArgumentText(F fn) {
  try {
    fn();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

inline const graph::OpRegistry& Registry() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

inline BuildOptions Options(const std::string& strategy, int64_t devices, bool training = true) {
  BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = devices;
  options.training = training;
  return options;
}

inline GptConfig SmallGpt() {
  GptConfig c;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.sequence = 8;
  c.vocab = 16;
  c.batch = 4;
  return c;
}

// Large enough that the search lays a GPT out as Megatron does (the tiny one replicates some
// weights over tp, where it is cheaper).
inline GptConfig MegatronSizedGpt(int64_t layers = 2, int64_t batch = 8) {
  GptConfig c;
  c.layers = layers;
  c.hidden = 256;
  c.heads = 8;
  c.sequence = 64;
  c.vocab = 512;
  c.batch = batch;
  return c;
}

inline MlpConfig SmallMlp() {
  MlpConfig c;
  c.widths = {8, 16, 12, 4};
  c.batch = 16;
  return c;
}

inline int64_t ParameterElements(const BuiltModel& model) {
  int64_t n = 0;
  for (graph::TensorId p : model.parameters) n += model.graph.tensor(p).meta.shape.numel();
  return n;
}

// The pin of the tensor named `name`, as text; "none" when unpinned.
inline std::string PinOf(const BuiltModel& model, const std::string& name) {
  const auto id = model.graph.FindTensor(name);
  if (!id) return "missing tensor " + name;
  const auto& pin = model.graph.tensor(*id).pin;
  return pin ? pin->ToString() : "none";
}

inline const graph::OpNode& OpNamed(const BuiltModel& model, const std::string& name) {
  const auto id = model.graph.FindOp(name);
  if (!id) throw InvalidArgumentError("test: no op named " + name);
  return model.graph.op(*id);
}

inline int CountOps(const BuiltModel& model, const std::string& type) {
  int n = 0;
  for (const graph::OpNode& op : model.graph.ops()) n += op.type == type;
  return n;
}

}  // namespace twinflow::models::model_test_helpers
