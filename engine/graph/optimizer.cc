#include "engine/graph/optimizer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::graph {
namespace {

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

double ParseNumber(const std::string& field, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value)) {
    throw InvalidArgumentError("optimizer field '" + field + "': '" + text +
                               "' is not a finite number");
  }
  return value;
}

void CheckRange(const std::string& field, double value, double lo, double hi, bool hi_open) {
  if (value < lo || value > hi || (hi_open && value == hi)) {
    throw InvalidArgumentError("optimizer field '" + field + "' = " + std::to_string(value) +
                               " is out of range");
  }
}

}  // namespace

OptimizerConfig ParseOptimizer(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = Trim(text.substr(0, colon));
  OptimizerConfig config;
  if (kind == "sgd") {
    config.kind = OptimizerConfig::Kind::kSgd;
  } else if (kind == "adam") {
    config.kind = OptimizerConfig::Kind::kAdam;
    config.learning_rate = 1e-3;
  } else if (kind == "adamw") {
    config.kind = OptimizerConfig::Kind::kAdamW;
    config.learning_rate = 1e-3;
    config.weight_decay = 0.01;
  } else {
    throw InvalidArgumentError("optimizer '" + kind + "' is not one of sgd, adam, adamw");
  }
  const bool sgd = config.kind == OptimizerConfig::Kind::kSgd;
  if (colon == std::string::npos) return config;

  std::set<std::string> seen;
  std::string rest = text.substr(colon + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string::npos) comma = rest.size();
    const std::string item = Trim(rest.substr(start, comma - start));
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw InvalidArgumentError("optimizer field '" + item + "' is not of the form name=value");
    }
    const std::string name = Trim(item.substr(0, eq));
    const double value = ParseNumber(name, Trim(item.substr(eq + 1)));
    if (!seen.insert(name).second) {
      throw InvalidArgumentError("optimizer field '" + name + "' is given twice");
    }
    if (name == "lr") {
      CheckRange(name, value, 0, HUGE_VAL, false);
      config.learning_rate = value;
    } else if (name == "weight_decay") {
      CheckRange(name, value, 0, HUGE_VAL, false);
      config.weight_decay = value;
    } else if (sgd && name == "momentum") {
      CheckRange(name, value, 0, 1, true);
      config.momentum = value;
    } else if (!sgd && (name == "beta1" || name == "beta2")) {
      CheckRange(name, value, 0, 1, true);
      (name == "beta1" ? config.beta1 : config.beta2) = value;
    } else if (!sgd && (name == "epsilon" || name == "eps")) {
      CheckRange(name, value, 0, HUGE_VAL, false);
      config.epsilon = value;
    } else {
      throw InvalidArgumentError("optimizer field '" + name + "' is not known to " + kind);
    }
  }
  return config;
}

std::string OptimizerText(const OptimizerConfig& config) {
  // The fewest digits that read back exactly (0.001, not 0.00100000000000000002).
  const auto shortest = [](const char* name, double value) {
    char text[64];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(text, sizeof(text), "%.*g", digits, value);
      if (std::strtod(text, nullptr) == value) break;
    }
    return std::string(name) + "=" + text;
  };
  if (config.kind == OptimizerConfig::Kind::kSgd) {
    return "sgd:" + shortest("lr", config.learning_rate) + "," +
           shortest("momentum", config.momentum) + "," +
           shortest("weight_decay", config.weight_decay);
  }
  return std::string(config.kind == OptimizerConfig::Kind::kAdam ? "adam:" : "adamw:") +
         shortest("lr", config.learning_rate) + "," + shortest("beta1", config.beta1) + "," +
         shortest("beta2", config.beta2) + "," + shortest("epsilon", config.epsilon) + "," +
         shortest("weight_decay", config.weight_decay);
}

void AddOptimizer(GraphBuilder& builder, const OptimizerConfig& config,
                  const std::map<TensorId, TensorId>& gradients) {
  const GraphBuilder::Site saved = builder.site();
  const bool adam = config.kind != OptimizerConfig::Kind::kSgd;
  for (const auto& [var, grad] : gradients) {
    const LogicalGraph& graph = builder.graph();
    if (var < 0 || var >= static_cast<TensorId>(graph.tensors().size()) ||
        graph.tensor(var).producer < 0 || graph.op(graph.tensor(var).producer).type != "variable") {
      builder.SetSite(saved);
      throw InvalidArgumentError("optimizer: tensor " + std::to_string(var) +
                                 " is not the output of a variable op");
    }
    const OpNode var_op = graph.op(graph.tensor(var).producer);
    const TensorMeta meta = graph.tensor(var).meta;
    const std::optional<TensorPin> pin = graph.tensor(var).pin;
    if (grad < 0 || grad >= static_cast<TensorId>(graph.tensors().size()) ||
        !(graph.tensor(grad).meta == meta)) {
      builder.SetSite(saved);
      throw InvalidArgumentError("optimizer: the gradient of variable '" + var_op.name +
                                 "' does not match its " + meta.ToString());
    }
    builder.PlaceLike(var_op);
    const std::string& name = var_op.name;
    // Optimizer state: zero-initialised variables laid out like the parameter.
    auto state = [&](const std::string& suffix, Shape shape, DType dtype, bool like_param) {
      const TensorId t = builder.Variable(name + suffix, std::move(shape), dtype,
                                          Attrs{{"init", std::string("zeros")}});
      if (like_param && pin) builder.Pin(t, *pin);
      return t;
    };
    auto assign = [&](TensorId target, TensorId value, const std::string& suffix) {
      builder.Add("assign", {target, value}, {}, name + suffix);
    };
    Attrs attrs{{"lr", config.learning_rate}, {"weight_decay", config.weight_decay}};
    if (!adam && config.momentum == 0) {
      assign(var, builder.Add1("sgd_update", {var, grad}, attrs, name + "/sgd_update"), "/assign");
    } else if (!adam) {
      const TensorId buf = state("/momentum", meta.shape, meta.dtype, true);
      attrs.Set("momentum", config.momentum);
      const std::vector<TensorId> out =
          builder.Add("sgd_momentum_update", {var, grad, buf}, attrs, name + "/sgd_update");
      assign(var, out[0], "/assign");
      assign(buf, out[1], "/momentum_assign");
    } else {
      const TensorId m = state("/adam_m", meta.shape, meta.dtype, true);
      const TensorId v = state("/adam_v", meta.shape, meta.dtype, true);
      const TensorId step = state("/adam_step", Shape{}, DType::kF32, false);
      attrs.Set("beta1", config.beta1);
      attrs.Set("beta2", config.beta2);
      attrs.Set("epsilon", config.epsilon);
      attrs.Set("decoupled", config.kind == OptimizerConfig::Kind::kAdamW);
      const std::vector<TensorId> out =
          builder.Add("adam_update", {var, grad, m, v, step}, attrs, name + "/adam_update");
      const TensorId next_step =
          builder.Add1("step_increment", {step}, {}, name + "/adam_step_next");
      assign(var, out[0], "/assign");
      assign(m, out[1], "/adam_m_assign");
      assign(v, out[2], "/adam_v_assign");
      assign(step, next_step, "/adam_step_assign");
    }
  }
  builder.SetSite(saved);
}

}  // namespace twinflow::graph
