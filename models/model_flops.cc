#include "models/model_flops.h"

namespace twinflow::models {

double DecoderModelFlops(const GptConfig& c) {
  const double b = static_cast<double>(c.batch), s = static_cast<double>(c.sequence);
  const double l = static_cast<double>(c.layers), h = static_cast<double>(c.hidden);
  const double groups = static_cast<double>(c.KvHeads()) / static_cast<double>(c.heads);
  const double gated = c.mlp == MlpKind::kSwiGlu ? 1.5 : 1.0;
  const double attention = 1 + groups + s / h;
  const double mlp = static_cast<double>(c.FfnSize()) / h * gated;
  const double logits = static_cast<double>(c.vocab) / (2 * l * h);
  return 12 * b * s * l * h * h * (attention + mlp + logits);
}

double MlpModelFlops(const MlpConfig& config) {
  double weights = 0;
  for (size_t i = 0; i + 1 < config.widths.size(); ++i) {
    weights += static_cast<double>(config.widths[i]) * static_cast<double>(config.widths[i + 1]);
  }
  return 6 * weights * static_cast<double>(config.batch);
}

}  // namespace twinflow::models
