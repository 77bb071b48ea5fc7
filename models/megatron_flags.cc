#include "models/megatron_flags.h"

#include <algorithm>

#include "engine/core/error.h"

namespace twinflow::models {
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 40;

bool IsFlag(const std::string& word) { return word.size() > 2 && word.rfind("--", 0) == 0; }

bool EndsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// The index of the first flag: past python/torchrun and the script, `pretrain_gpt.py`.
size_t FirstFlag(const std::vector<std::string>& words) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (EndsWith(words[i], ".py")) return i + 1;
  }
  return 0;
}

}  // namespace

MegatronFlags::MegatronFlags(const std::vector<std::string>& words,
                             const std::set<std::string>& switches,
                             const std::set<std::string>& valued) {
  for (size_t i = FirstFlag(words); i < words.size(); ++i) {
    if (!IsFlag(words[i])) {
      throw InvalidArgumentError(
          "'" + words[i] + "' is not a --flag" +
          (flags_.empty() ? std::string() : " (it follows --" + flags_.back().name + ")"));
    }
    Flag flag;
    flag.name = words[i].substr(2);
    const size_t eq = flag.name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      flag.value = flag.name.substr(eq + 1);
      flag.name.resize(eq);
    }
    if (switches.count(flag.name)) {
      if (inline_value) throw InvalidArgumentError("--" + flag.name + " takes no value");
    } else if (valued.count(flag.name)) {
      if (!inline_value) {
        if (i + 1 >= words.size() || IsFlag(words[i + 1])) {
          throw InvalidArgumentError("--" + flag.name + " needs a value");
        }
        flag.value = words[++i];
      }
    } else if (!inline_value) {
      for (; i + 1 < words.size() && !IsFlag(words[i + 1]); ++i) {
        flag.value += (flag.value.empty() ? "" : " ") + words[i + 1];
      }
    }
    flags_.push_back(std::move(flag));
  }
}

bool MegatronFlags::Has(const std::string& name) {
  bool found = false;
  for (Flag& flag : flags_) {
    if (flag.name == name) flag.read = found = true;
  }
  return found;
}

std::string MegatronFlags::Text(const std::string& name, const std::string& fallback) {
  if (!Has(name)) return fallback;
  const auto last = std::find_if(flags_.rbegin(), flags_.rend(),
                                 [&](const Flag& flag) { return flag.name == name; });
  return last->value;
}

int64_t MegatronFlags::Size(const std::string& name, int64_t fallback) {
  if (!Has(name)) return fallback;
  const std::string text = Text(name, "");
  const bool digits =
      !text.empty() && text.size() <= 13 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int64_t value = digits ? std::stoll(text) : 0;
  if (value < 1 || value > kMaxSize) {
    throw InvalidArgumentError("--" + name + " '" + text + "' is not a positive integer");
  }
  return value;
}

std::vector<std::string> MegatronFlags::Unread() const {
  std::vector<std::string> names;
  for (const Flag& flag : flags_) {
    if (!flag.read && std::find(names.begin(), names.end(), flag.name) == names.end()) {
      names.push_back(flag.name);
    }
  }
  return names;
}

}  // namespace twinflow::models
