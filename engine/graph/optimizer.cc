#include "engine/graph/optimizer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/lr_decay.h"

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

// A schedule field (warmup, decay_steps, min_lr) into config.schedule; false for other names.
bool ParseScheduleField(const std::string& name, double value, OptimizerConfig& config) {
  if (name != "warmup" && name != "decay_steps" && name != "min_lr") return false;
  CheckRange(name, value, 0, name == "min_lr" ? HUGE_VAL : 1e15, false);
  if (name != "min_lr" && value != std::floor(value)) {
    throw InvalidArgumentError("optimizer field '" + name + "' must be an integer");
  }
  LrSchedule& schedule = *(config.schedule = config.schedule.value_or(LrSchedule{}));
  if (name == "warmup") schedule.warmup = static_cast<int64_t>(value);
  if (name == "decay_steps") schedule.decay_steps = static_cast<int64_t>(value);
  if (name == "min_lr") schedule.min_lr = value;
  return true;
}

void CheckSchedule(const OptimizerConfig& config) {
  if (!config.schedule) return;
  if (config.schedule->min_lr > config.learning_rate) {
    throw InvalidArgumentError("optimizer field 'min_lr' exceeds lr");
  }
  if (config.schedule->decay != LrDecay::kConstant &&
      config.schedule->decay_steps <= config.schedule->warmup) {
    throw InvalidArgumentError(
        std::string("optimizer field 'decay_steps' must exceed warmup for ") +
        "schedule=" + LrDecayName(config.schedule->decay));
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
    if (!seen.insert(name).second) {
      throw InvalidArgumentError("optimizer field '" + name + "' is given twice");
    }
    if (name == "schedule") {
      config.schedule = config.schedule.value_or(LrSchedule{});
      config.schedule->decay = ParseLrDecay(Trim(item.substr(eq + 1)));
      continue;
    }
    const double value = ParseNumber(name, Trim(item.substr(eq + 1)));
    if (ParseScheduleField(name, value, config)) continue;
    if (name == "clip_grad") {
      CheckRange(name, value, 0, HUGE_VAL, false);
      config.clip_grad = value;
    } else if (name == "loss_scale") {
      CheckRange(name, value, 1, HUGE_VAL, false);
      config.loss_scale = value;
    } else if (name == "loss_scale_window") {
      CheckRange(name, value, 1, 1e9, false);
      if (value != std::floor(value)) {
        throw InvalidArgumentError("optimizer field 'loss_scale_window' must be an integer");
      }
      config.loss_scale_window = static_cast<int64_t>(value);
    } else if (name == "lr") {
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
  CheckSchedule(config);
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
  // Defaults of the step-level fields are left out, so texts of earlier runs read the same.
  const OptimizerConfig defaults;
  std::string control;
  if (config.clip_grad != defaults.clip_grad)
    control += "," + shortest("clip_grad", config.clip_grad);
  if (config.loss_scale != defaults.loss_scale) {
    control += "," + shortest("loss_scale", config.loss_scale);
  }
  if (config.loss_scale_window != defaults.loss_scale_window) {
    control += ",loss_scale_window=" + std::to_string(config.loss_scale_window);
  }
  if (config.schedule) {
    control += std::string(",schedule=") + LrDecayName(config.schedule->decay) +
               ",warmup=" + std::to_string(config.schedule->warmup) +
               ",decay_steps=" + std::to_string(config.schedule->decay_steps) + "," +
               shortest("min_lr", config.schedule->min_lr);
  }
  if (config.kind == OptimizerConfig::Kind::kSgd) {
    return "sgd:" + shortest("lr", config.learning_rate) + "," +
           shortest("momentum", config.momentum) + "," +
           shortest("weight_decay", config.weight_decay) + control;
  }
  return std::string(config.kind == OptimizerConfig::Kind::kAdam ? "adam:" : "adamw:") +
         shortest("lr", config.learning_rate) + "," + shortest("beta1", config.beta1) + "," +
         shortest("beta2", config.beta2) + "," + shortest("epsilon", config.epsilon) + "," +
         shortest("weight_decay", config.weight_decay) + control;
}

TensorId AddLossScale(GraphBuilder& builder, const OptimizerConfig& config) {
  return builder.Variable("loss_scale", Shape{}, DType::kF32,
                          Attrs{{"init", std::string("constant")}, {"value", config.loss_scale}});
}

namespace {

// InvalidArgumentError unless every pair is (a variable, a gradient of its meta).
void CheckGradients(const LogicalGraph& graph, const std::map<TensorId, TensorId>& gradients) {
  const auto count = static_cast<TensorId>(graph.tensors().size());
  for (const auto& [var, grad] : gradients) {
    if (var < 0 || var >= count || graph.tensor(var).producer < 0 ||
        graph.op(graph.tensor(var).producer).type != "variable") {
      throw InvalidArgumentError("optimizer: tensor " + std::to_string(var) +
                                 " is not the output of a variable op");
    }
    const TensorMeta& meta = graph.tensor(var).meta;
    if (grad < 0 || grad >= count || !(graph.tensor(grad).meta == meta)) {
      throw InvalidArgumentError("optimizer: the gradient of variable '" +
                                 graph.op(graph.tensor(var).producer).name +
                                 "' does not match its " + meta.ToString());
    }
  }
}

const OpNode& ProducerOf(const GraphBuilder& builder, TensorId t) {
  return builder.graph().op(builder.graph().tensor(t).producer);
}

// The step's gradient factor (grad_factor), or nullopt when neither clipping nor loss scaling
// is asked for. Each gradient's sum of squares is taken on its own stage; they are added, in
// variable order, and the factor computed where the first variable lives; with loss scaling
// the scale is then updated on the scale's own stage.
std::optional<TensorId> AddGradientFactor(GraphBuilder& builder, const OptimizerConfig& config,
                                          const std::map<TensorId, TensorId>& gradients,
                                          std::optional<TensorId> loss_scale) {
  if ((config.clip_grad <= 0 && !loss_scale) || gradients.empty()) return std::nullopt;
  std::vector<TensorId> squares;
  for (const auto& [var, grad] : gradients) {
    const OpNode& var_op = ProducerOf(builder, var);
    builder.PlaceLike(var_op);
    squares.push_back(builder.Add1("sum_squares", {grad}, {}, var_op.name + "/sum_squares"));
  }
  builder.PlaceLike(ProducerOf(builder, gradients.begin()->first));
  std::optional<TensorId> total;
  for (TensorId s : squares) total = total ? builder.Add1("add", {*total, s}) : s;
  std::vector<TensorId> inputs = {*total};
  if (loss_scale) inputs.push_back(*loss_scale);
  const TensorId factor =
      builder.Add1("grad_factor", inputs, Attrs{{"max_norm", config.clip_grad}}, "grad_factor");
  if (loss_scale) {
    const OpNode& scale_op = ProducerOf(builder, *loss_scale);
    builder.PlaceLike(scale_op);
    const TensorId good = builder.Variable("loss_scale_good_steps", Shape{}, DType::kF32,
                                           Attrs{{"init", std::string("zeros")}});
    const std::vector<TensorId> next = builder.Add(
        "loss_scale_update", {*loss_scale, good, *total},
        Attrs{{"window", config.loss_scale_window}, {"min_scale", 1.0}}, "loss_scale_update");
    builder.Add("assign", {*loss_scale, next[0]}, {}, "loss_scale/assign");
    builder.Add("assign", {good, next[1]}, {}, "loss_scale_good_steps/assign");
  }
  return factor;
}

// The step's learning rate (lr_schedule), or nullopt without a schedule: at the first
// variable's site, from the variables "learning_rate" and "lr_step"; the counter advances once
// a step, but not on a step the factor skips (as Adam's).
std::optional<TensorId> AddLearningRate(GraphBuilder& builder, const OptimizerConfig& config,
                                        const std::map<TensorId, TensorId>& gradients,
                                        std::optional<TensorId> factor) {
  if (!config.schedule || gradients.empty()) return std::nullopt;
  builder.PlaceLike(ProducerOf(builder, gradients.begin()->first));
  const TensorId base =
      builder.Variable("learning_rate", Shape{}, DType::kF32,
                       Attrs{{"init", std::string("constant")}, {"value", config.learning_rate}});
  const TensorId step =
      builder.Variable("lr_step", Shape{}, DType::kF32, Attrs{{"init", std::string("zeros")}});
  const LrSchedule& s = *config.schedule;
  const TensorId lr = builder.Add1("lr_schedule", {step, base},
                                   Attrs{{"decay", std::string(LrDecayName(s.decay))},
                                         {"warmup", static_cast<double>(s.warmup)},
                                         {"decay_steps", static_cast<double>(s.decay_steps)},
                                         {"min_lr", s.min_lr}},
                                   "lr_schedule");
  std::vector<TensorId> counter = {step};
  if (factor) counter.push_back(*factor);
  builder.Add("assign", {step, builder.Add1("step_increment", counter, {}, "lr_step_next")}, {},
              "lr_step/assign");
  return lr;
}

// The update of one variable and the assigns of its new value and state, at the variable's
// site; `lr` (if any) follows the tensors of every update op, and `factor` (if any) is the last
// input of every update op and of the step counter's.
void AddUpdate(GraphBuilder& builder, const OptimizerConfig& config, TensorId var, TensorId grad,
               std::optional<TensorId> lr, std::optional<TensorId> factor) {
  const OpNode var_op = ProducerOf(builder, var);
  const TensorMeta meta = builder.meta(var);
  const std::optional<TensorPin> pin = builder.graph().tensor(var).pin;
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
  auto with_factor = [&](std::vector<TensorId> inputs) {
    if (factor) inputs.push_back(*factor);
    return inputs;
  };
  const auto with_scalars = [&](std::vector<TensorId> inputs) {
    if (lr) inputs.push_back(*lr);
    return with_factor(std::move(inputs));
  };
  const bool adam = config.kind != OptimizerConfig::Kind::kSgd;
  Attrs attrs{{"lr", config.learning_rate}, {"weight_decay", config.weight_decay}};
  if (lr) attrs.Set("lr_input", true);
  if (!adam && config.momentum == 0) {
    assign(var, builder.Add1("sgd_update", with_scalars({var, grad}), attrs, name + "/sgd_update"),
           "/assign");
  } else if (!adam) {
    const TensorId buf = state("/momentum", meta.shape, meta.dtype, true);
    attrs.Set("momentum", config.momentum);
    const std::vector<TensorId> out = builder.Add(
        "sgd_momentum_update", with_scalars({var, grad, buf}), attrs, name + "/sgd_update");
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
    const std::vector<TensorId> out = builder.Add(
        "adam_update", with_scalars({var, grad, m, v, step}), attrs, name + "/adam_update");
    const TensorId next_step =
        builder.Add1("step_increment", with_factor({step}), {}, name + "/adam_step_next");
    assign(var, out[0], "/assign");
    assign(m, out[1], "/adam_m_assign");
    assign(v, out[2], "/adam_v_assign");
    assign(step, next_step, "/adam_step_assign");
  }
}

}  // namespace

void AddOptimizer(GraphBuilder& builder, const OptimizerConfig& config,
                  const std::map<TensorId, TensorId>& gradients,
                  std::optional<TensorId> loss_scale) {
  CheckGradients(builder.graph(), gradients);
  const GraphBuilder::Site saved = builder.site();
  try {
    const std::optional<TensorId> factor =
        AddGradientFactor(builder, config, gradients, loss_scale);
    const std::optional<TensorId> lr = AddLearningRate(builder, config, gradients, factor);
    for (const auto& [var, grad] : gradients) AddUpdate(builder, config, var, grad, lr, factor);
  } catch (...) {
    builder.SetSite(saved);
    throw;
  }
  builder.SetSite(saved);
}

}  // namespace twinflow::graph
