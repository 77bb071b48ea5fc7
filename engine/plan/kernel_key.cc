#include "engine/plan/kernel_key.h"

#include <cstdio>

#include "engine/plan/plan_enums.h"

namespace twinflow::plan {
namespace {

std::string Text(const TensorDesc& t) {
  std::string s = EnumName(t.dtype()) + "[";
  for (int i = 0; i < t.shape_size(); ++i) s += (i ? "," : "") + std::to_string(t.shape(i));
  return s + "]";
}

std::string Text(const Attr& a) {
  std::string s = a.name() + "=";
  switch (a.value_case()) {
    case Attr::kI:
      return s + std::to_string(a.i());
    case Attr::kF: {
      char f[32];
      std::snprintf(f, sizeof(f), "%.17g", a.f());
      return s + f;
    }
    case Attr::kB:
      return s + (a.b() ? "true" : "false");
    case Attr::kS:
      return s + a.s();
    case Attr::kInts: {
      for (int i = 0; i < a.ints().values_size(); ++i)
        s += (i ? ":" : "") + std::to_string(a.ints().values(i));
      return s;
    }
    default:
      return s;
  }
}

}  // namespace

std::string KernelKey(const Task& task) {
  std::string key = task.op().type();
  for (const Attr& a : task.op().attrs()) key += "|" + Text(a);
  key += "|";
  for (int i = 0; i < task.op().inputs_size(); ++i)
    key += (i ? ";" : "") + Text(task.op().inputs(i));
  return key;
}

}  // namespace twinflow::plan
