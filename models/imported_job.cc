#include "models/imported_job.h"

namespace twinflow::models {

std::string ImportedJob::StrategyText() const {
  std::string text;
  for (const auto& [key, value] : strategy) text += (text.empty() ? "" : ",") + key + "=" + value;
  return text;
}

}  // namespace twinflow::models
