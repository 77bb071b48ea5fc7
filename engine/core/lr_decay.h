#pragma once
// The names of the learning-rate decays (LrDecay, lr_schedule.h): the lr_schedule op's attr
// `decay` and the optimizer text's `schedule` field.
#include <string>

#include "engine/core/attrs.h"
#include "engine/core/lr_schedule.h"

namespace twinflow {

const char* LrDecayName(LrDecay decay);  // "constant", "linear", "cosine"
// InvalidArgumentError naming the text otherwise.
LrDecay ParseLrDecay(const std::string& text);
// Attr "decay" of an lr_schedule op; constant when absent.
LrDecay LrDecayAttr(const Attrs& attrs);

}  // namespace twinflow
