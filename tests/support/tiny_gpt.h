#pragma once
// The tiny GPT the integration tests train on 4 devices: 2 layers, hidden 16, 2 heads,
// sequence 8, vocabulary 32, batch 8 (4 micro-batches of 2, split over dp=2); and the tiny
// Llama of the same sizes with 4 heads sharing 2 key-value heads and an FFN of 48.
#include "models/model.h"

namespace twinflow::testing {

inline models::GptConfig TinyGptConfig() {
  models::GptConfig config;
  config.layers = 2;
  config.hidden = 16;
  config.heads = 2;
  config.sequence = 8;
  config.vocab = 32;
  config.batch = 8;
  return config;
}

inline models::GptConfig TinyLlamaConfig() {
  models::GptConfig config = models::GptConfig::Llama();
  const models::GptConfig sizes = TinyGptConfig();
  config.layers = sizes.layers;
  config.hidden = sizes.hidden;
  config.heads = 4;
  config.kv_heads = 2;
  config.ffn = 48;
  config.sequence = sizes.sequence;
  config.vocab = sizes.vocab;
  config.batch = sizes.batch;
  return config;
}

}  // namespace twinflow::testing
