// JSON is parsed by protobuf into a google.protobuf.Struct (the library the Plan already
// uses), then read key by key.
#include "models/hf_config.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"

namespace twinflow::models {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// A config's keys, with errors that name the file.
class HfKeys {
 public:
  HfKeys(const Struct& root, std::string path) : root_(root), path_(std::move(path)) {}

  const Value* Find(const std::string& key) const {
    const auto it = root_.fields().find(key);
    return it == root_.fields().end() || it->second.has_null_value() ? nullptr : &it->second;
  }
  std::string Text(const std::string& key, const std::string& fallback) const {
    const Value* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->has_string_value()) Fail(key, "is not a string");
    return v->string_value();
  }
  double Number(const std::string& key, double fallback) const {
    const Value* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->has_number_value()) Fail(key, "is not a number");
    return v->number_value();
  }
  // A positive integral size; `fallback` 0 makes the key required.
  int64_t Size(const std::string& key, int64_t fallback = 0) const {
    if (Find(key) == nullptr && fallback > 0) return fallback;
    if (Find(key) == nullptr) Fail(key, "is missing");
    const double n = Number(key, 0);
    if (!(n >= 1) || n > 1e15 || std::floor(n) != n) Fail(key, "must be a positive integer");
    return static_cast<int64_t>(n);
  }
  bool Flag(const std::string& key, bool fallback) const {
    const Value* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->has_bool_value()) Fail(key, "is not true or false");
    return v->bool_value();
  }
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    throw InvalidArgumentError(path_ + ": \"" + key + "\" " + what);
  }

 private:
  const Struct& root_;  // owned by ReadHfConfig, which outlives this
  std::string path_;
};

Struct ParseFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgumentError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(text.str(), &root);
  if (!status.ok()) {
    throw InvalidArgumentError(path + " is not a JSON object: " + status.ToString());
  }
  return root;
}

GptConfig ReadGpt2(const HfKeys& keys) {
  GptConfig c;
  c.layers = keys.Size("n_layer");
  c.hidden = keys.Size("n_embd");
  c.heads = keys.Size("n_head");
  c.ffn = keys.Size("n_inner", 4 * c.hidden);
  c.sequence = keys.Size("n_positions");
  c.vocab = keys.Size("vocab_size");
  c.norm_epsilon = keys.Number("layer_norm_epsilon", 1e-5);
  return c;
}

GptConfig ReadLlama(const HfKeys& keys) {
  GptConfig c = GptConfig::Llama();
  c.layers = keys.Size("num_hidden_layers");
  c.hidden = keys.Size("hidden_size");
  c.heads = keys.Size("num_attention_heads");
  c.kv_heads = keys.Size("num_key_value_heads", c.heads);
  c.ffn = keys.Size("intermediate_size");
  c.sequence = keys.Size("max_position_embeddings");
  c.vocab = keys.Size("vocab_size");
  c.rope_theta = keys.Number("rope_theta", 1e4);
  c.norm_epsilon = keys.Number("rms_norm_eps", 1e-6);
  if (keys.Flag("tie_word_embeddings", false)) {
    keys.Fail("tie_word_embeddings", "is true: the llama model has an untied head");
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (keys.Flag(bias, false)) keys.Fail(bias, "is true: the llama model has no biases");
  }
  if (keys.Text("hidden_act", "silu") != "silu") keys.Fail("hidden_act", "is not silu");
  // rope_scaling (Llama 3.1's {"rope_type": "llama3", "factor": 8.0, ...}, or null) only
  // rescales the rotary angles: it changes no size and no cost, so it is not read.
  if (keys.Find("head_dim") != nullptr && keys.Size("head_dim") * c.heads != c.hidden) {
    keys.Fail("head_dim", "is not hidden_size / num_attention_heads");
  }
  return c;
}

}  // namespace

GptConfig ReadHfConfig(const std::string& path, DecoderFamily family) {
  const Struct root = ParseFile(path);
  const HfKeys keys(root, path);
  const std::string type = keys.Text("model_type", "");
  DecoderFamily found;
  if (type == "gpt2") {
    found = DecoderFamily::kGpt;
  } else if (type == "llama" || type == "mistral") {
    found = DecoderFamily::kLlama;
  } else {
    keys.Fail("model_type", "'" + type + "' is none of gpt2, llama, mistral");
  }
  if (found != family) {
    keys.Fail("model_type", "'" + type + "' is a " + DecoderFamilyName(found) +
                                " model; run it with --model " + DecoderFamilyName(found));
  }
  return found == DecoderFamily::kGpt ? ReadGpt2(keys) : ReadLlama(keys);
}

}  // namespace twinflow::models
