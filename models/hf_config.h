#pragma once
// Reading a Hugging Face config.json into a decoder config, so a user can name the model they
// train by the file that ships with its weights.
#include <string>

#include "models/model.h"

namespace twinflow::models {

// The sizes and choices of the config.json at `path`: model_type gpt2 (n_layer, n_embd, n_head,
// n_inner, n_positions, vocab_size, layer_norm_epsilon) into the gpt family, llama or mistral
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
// intermediate_size, max_position_embeddings, vocab_size, rope_theta, rms_norm_eps) into the
// llama family; rope_scaling (Llama 3.1's) is accepted and not read, as it changes no cost. The
// batch stays the family default. InvalidArgumentError naming the file and the key for an
// unreadable file, bad JSON, a missing or non-integral size, a model_type of the other family
// or none we read, or what the model cannot express (tied embeddings in a llama, biases, an
// activation other than SiLU).
GptConfig ReadHfConfig(const std::string& path, DecoderFamily family);

}  // namespace twinflow::models
