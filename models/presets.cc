// The published sizes of the decoder models a user names by preset, and the small defaults of
// each family. Sources: GPT-3 (Brown et al. 2020, Table 2.1), Llama 2 (Touvron et al. 2023,
// Table 1, and the Hugging Face configs of meta-llama/Llama-2-*-hf), Llama 3 (Dubey et al.
// 2024, Table 3, and the meta-llama/Llama-3.1-* configs). Batches are the published tokens per
// step over the preset's sequence: GPT-3 3.2M, Llama 4M.
#include <array>

#include "engine/core/error.h"
#include "models/model.h"

namespace twinflow::models {
namespace {

struct Preset {
  const char* name;
  DecoderFamily family;
  int64_t layers, hidden, heads, kv_heads, ffn, vocab, sequence, batch;
  double rope_theta;
};

constexpr std::array<Preset, 7> kPresets{{
    {"gpt3-175b", DecoderFamily::kGpt, 96, 12288, 96, 0, 0, 50257, 2048, 1536, 1e4},
    {"llama2-7b", DecoderFamily::kLlama, 32, 4096, 32, 32, 11008, 32000, 4096, 1024, 1e4},
    {"llama2-13b", DecoderFamily::kLlama, 40, 5120, 40, 40, 13824, 32000, 4096, 1024, 1e4},
    {"llama2-70b", DecoderFamily::kLlama, 80, 8192, 64, 8, 28672, 32000, 4096, 1024, 1e4},
    {"llama3-8b", DecoderFamily::kLlama, 32, 4096, 32, 8, 14336, 128256, 8192, 512, 5e5},
    {"llama3-70b", DecoderFamily::kLlama, 80, 8192, 64, 8, 28672, 128256, 8192, 512, 5e5},
    {"llama3-405b", DecoderFamily::kLlama, 126, 16384, 128, 8, 53248, 128256, 8192, 512, 5e5},
}};

std::string PresetList(DecoderFamily family) {
  std::string list;
  for (const Preset& p : kPresets) {
    if (p.family == family) list += std::string(list.empty() ? "" : ", ") + p.name;
  }
  return list;
}

}  // namespace

const char* DecoderFamilyName(DecoderFamily family) {
  return family == DecoderFamily::kLlama ? "llama" : "gpt";
}

DecoderFamily ParseDecoderFamily(const std::string& model) {
  for (DecoderFamily family : {DecoderFamily::kGpt, DecoderFamily::kLlama}) {
    if (model == DecoderFamilyName(family)) return family;
  }
  throw InvalidArgumentError("unknown model '" + model + "' (expected mlp, gpt or llama)");
}

GptConfig GptConfig::Llama() {
  GptConfig c;
  c.layers = 4;  // a layer for each virtual stage of pp=2,vp=2
  c.kv_heads = 2;
  c.ffn = 176;  // about 8/3 * hidden, as Llama sizes SwiGLU, rounded to a multiple of 16
  c.norm = NormKind::kRmsNorm;
  c.mlp = MlpKind::kSwiGlu;
  c.positions = PositionKind::kRotary;
  c.bias = false;
  return c;
}

GptConfig GptConfig::Gpt3_175B() { return DecoderConfig(DecoderFamily::kGpt, "gpt3-175b"); }

GptConfig DecoderConfig(DecoderFamily family, const std::string& preset) {
  GptConfig c = family == DecoderFamily::kLlama ? GptConfig::Llama() : GptConfig();
  if (preset.empty()) return c;
  for (const Preset& p : kPresets) {
    if (preset != p.name) continue;
    if (p.family != family) {
      throw InvalidArgumentError("preset '" + preset + "' is a " + DecoderFamilyName(p.family) +
                                 " model, not a " + DecoderFamilyName(family) + " one");
    }
    c.layers = p.layers;
    c.hidden = p.hidden;
    c.heads = p.heads;
    c.kv_heads = p.kv_heads;
    c.ffn = p.ffn;
    c.vocab = p.vocab;
    c.sequence = p.sequence;
    c.batch = p.batch;
    c.rope_theta = p.rope_theta;
    return c;
  }
  throw InvalidArgumentError("unknown " + std::string(DecoderFamilyName(family)) + " preset '" +
                             preset + "' (expected " + PresetList(family) + ")");
}

}  // namespace twinflow::models
