#include "models/model.h"

#include "engine/core/error.h"

namespace twinflow::models {

GptConfig GptConfig::Gpt3_175B() {
  GptConfig c;
  c.layers = 96;
  c.hidden = 12288;
  c.heads = 96;
  c.sequence = 2048;
  c.vocab = 50257;
  c.batch = 1536;  // 3.1M tokens per step, as GPT-3 was trained
  return c;
}

int64_t StageOf(int64_t layer, int64_t layers, int64_t stages) {
  return layer * stages / layers;
}

}  // namespace twinflow::models
