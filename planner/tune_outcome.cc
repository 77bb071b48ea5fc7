#include "planner/tune_outcome.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "engine/core/error.h"
#include "engine/core/text_format.h"

namespace twinflow::planner {
namespace {

// A string as its length, a colon and its bytes, so that any text (tabs, newlines) survives.
void PutText(std::string& out, const std::string& text) {
  out += std::to_string(text.size()) + ":" + text;
}

std::string GetText(const std::string& in, size_t& at) {
  const size_t colon = in.find(':', at);
  if (colon == std::string::npos) throw InvalidArgumentError("tune outcomes: a text has no length");
  const size_t size = std::stoul(in.substr(at, colon - at));
  if (colon + 1 + size > in.size()) throw InvalidArgumentError("tune outcomes: a text is cut");
  at = colon + 1 + size;
  return in.substr(colon + 1, size);
}

std::string Exact(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string JsonText(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRanked:
      return "ranked";
    case Verdict::kOutOfMemory:
      return "out_of_memory";
    case Verdict::kNotSimulated:
      return "not_simulated";
    case Verdict::kDeadlocks:
      return "deadlocks";
    case Verdict::kRefused:
      break;
  }
  return "refused";
}

void RankOutcomes(std::vector<Outcome>& outcomes) {
  std::stable_sort(outcomes.begin(), outcomes.end(), [](const Outcome& a, const Outcome& b) {
    if (a.ok() != b.ok()) return a.ok();
    if (a.ok() && a.step_s != b.step_s) return a.step_s < b.step_s;
    return a.index < b.index;
  });
}

std::string EncodeOutcomes(const std::vector<Outcome>& outcomes) {
  std::string out;
  for (const Outcome& o : outcomes) {
    out += std::to_string(o.index) + " " + std::to_string(static_cast<int>(o.verdict)) + " " +
           Exact(o.step_s) + " " + Exact(o.samples_per_s) + " " + Exact(o.mfu) + " " +
           Exact(o.tokens_per_device_s) + " " + Exact(o.model_flops_per_device_s) + " " +
           std::to_string(o.peak_bytes) + " " + Exact(o.bound_s) + " " +
           (o.estimated ? "1 " : "0 ") + std::to_string(static_cast<int>(o.candidate.zero)) + " " +
           std::to_string(static_cast<int>(o.candidate.recompute)) + " ";
    PutText(out, o.why);
    PutText(out, o.parallelism);
  }
  return out;
}

namespace {

// An enum sent as its number, checked against its last value.
template <typename Enum>
Enum EnumFrom(const std::string& token, Enum last) {
  const int value = std::stoi(token);
  if (value < 0 || value > static_cast<int>(last)) {
    throw InvalidArgumentError("tune outcomes: no such value " + token);
  }
  return static_cast<Enum>(value);
}

}  // namespace

std::vector<Outcome> DecodeOutcomes(const std::string& text,
                                    const std::vector<parallel::Strategy>& candidates) {
  std::vector<Outcome> outcomes;
  size_t at = 0;
  const auto token = [&]() {
    const size_t space = text.find(' ', at);
    if (space == std::string::npos) throw InvalidArgumentError("tune outcomes: a record is cut");
    const std::string t = text.substr(at, space - at);
    at = space + 1;
    return t;
  };
  try {
    while (at < text.size()) {
      Outcome o;
      o.index = std::stoll(token());
      if (o.index < 0 || o.index >= static_cast<int64_t>(candidates.size())) {
        throw InvalidArgumentError("tune outcomes: no candidate " + std::to_string(o.index));
      }
      o.candidate = candidates[static_cast<size_t>(o.index)];
      o.verdict = EnumFrom(token(), Verdict::kRefused);
      o.step_s = std::stod(token());
      o.samples_per_s = std::stod(token());
      o.mfu = std::stod(token());
      o.tokens_per_device_s = std::stod(token());
      o.model_flops_per_device_s = std::stod(token());
      o.peak_bytes = std::stoll(token());
      o.bound_s = std::stod(token());
      o.estimated = token() == "1";
      o.candidate.zero = EnumFrom(token(), parallel::ZeroStage::kOptimizerState);
      o.candidate.recompute = EnumFrom(token(), parallel::Recompute::kFull);
      o.why = GetText(text, at);
      o.parallelism = GetText(text, at);
      outcomes.push_back(std::move(o));
    }
  } catch (const std::logic_error&) {  // stoll, stod: not a number
    throw InvalidArgumentError("tune outcomes: a malformed number near byte " + std::to_string(at));
  }
  return outcomes;
}

std::string OutcomesJson(const std::vector<Outcome>& ranked) {
  std::string json = "[";
  int64_t rank = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Outcome& o = ranked[i];
    json += std::string(i ? "," : "") +
            "\n {\"rank\": " + (o.ok() ? std::to_string(++rank) : "null") +
            ", \"strategy\": " + JsonText(o.candidate.Compact()) +
            ", \"fits\": " + (o.ok() ? "true" : "false") + ", \"verdict\": \"" +
            VerdictName(o.verdict) + "\"";
    if (o.bound_s > 0) json += ", \"bound_s\": " + Exact(o.bound_s);
    if (o.ok()) {
      json += ", \"step_s\": " + Exact(o.step_s) +
              ", \"samples_per_s\": " + Exact(o.samples_per_s) +
              ", \"tokens_per_device_s\": " + Exact(o.tokens_per_device_s) +
              ", \"model_tflops_per_device\": " + Exact(o.model_flops_per_device_s / 1e12) +
              ", \"mfu\": " + Exact(o.mfu) + ", \"peak_bytes\": " + std::to_string(o.peak_bytes) +
              (o.estimated ? ", \"estimated\": true" : "");
    } else {
      json += ", \"why\": " + JsonText(o.why);
    }
    json += "}";
  }
  return json + "\n]\n";
}

}  // namespace twinflow::planner
