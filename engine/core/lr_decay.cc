#include "engine/core/lr_decay.h"

#include "engine/core/error.h"

namespace twinflow {

const char* LrDecayName(LrDecay decay) {
  switch (decay) {
    case LrDecay::kLinear:
      return "linear";
    case LrDecay::kCosine:
      return "cosine";
    case LrDecay::kConstant:
      break;
  }
  return "constant";
}

LrDecay ParseLrDecay(const std::string& text) {
  for (LrDecay decay : {LrDecay::kConstant, LrDecay::kLinear, LrDecay::kCosine}) {
    if (text == LrDecayName(decay)) return decay;
  }
  throw InvalidArgumentError("learning-rate schedule must be constant, linear or cosine, got '" +
                             text + "'");
}

LrDecay LrDecayAttr(const Attrs& attrs) {
  return attrs.Has("decay") ? ParseLrDecay(attrs.GetString("decay")) : LrDecay::kConstant;
}

}  // namespace twinflow
