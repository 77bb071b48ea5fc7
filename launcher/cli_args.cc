#include "launcher/cli_args.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "engine/core/error.h"

namespace twinflow::launcher {

const std::string& ParsedArgs::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InvalidArgumentError("missing required flag --" + name);
  return it->second;
}

int64_t ParsedArgs::GetInt(const std::string& name, int64_t min, int64_t max) const {
  const std::string& text = Get(name);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgumentError("--" + name + " expects an integer, got '" + text + "'");
  }
  if (value < min || value > max) {
    throw InvalidArgumentError("--" + name + " must be in [" + std::to_string(min) + ", " +
                               std::to_string(max) + "], got " + text);
  }
  return value;
}

double ParsedArgs::GetPositiveDouble(const std::string& name) const {
  const std::string& text = Get(name);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0) || !std::isfinite(value)) {
    throw InvalidArgumentError("--" + name + " expects a positive number, got '" + text + "'");
  }
  return value;
}

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

ArgParser& ArgParser::Required(std::string name, std::string value_name, std::string help) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(help), true, ""});
  return *this;
}

ArgParser& ArgParser::Optional(std::string name, std::string value_name, std::string help,
                               std::string default_value) {
  flags_.push_back(
      {std::move(name), std::move(value_name), std::move(help), false, std::move(default_value)});
  return *this;
}

ArgParser& ArgParser::Switch(std::string name, std::string help) {
  flags_.push_back({std::move(name), "", std::move(help), false, ""});
  return *this;
}

ArgParser& ArgParser::Epilog(std::string text) {
  epilog_ = std::move(text);
  return *this;
}

const FlagSpec* ArgParser::Find(std::string_view name) const {
  for (const FlagSpec& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

ParsedArgs ArgParser::Parse(const std::vector<std::string>& args) const {
  ParsedArgs parsed;
  // Help wins over every other mistake on the line: a user asking for help gets it.
  for (const std::string& arg : args) {
    if (arg == "-h" || arg == "--help") {
      parsed.help_ = true;
      return parsed;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // No command takes positional arguments: a bare word (or `--`) is a mistake.
    if (arg.rfind("-", 0) != 0 || arg == "-" || arg == "--") {
      throw InvalidArgumentError("unexpected argument '" + arg + "'");
    }
    if (arg.rfind("--", 0) != 0) throw InvalidArgumentError("unknown flag '" + arg + "'");
    std::string_view body = std::string_view(arg).substr(2);
    const size_t eq = body.find('=');
    const std::string_view name = body.substr(0, eq);
    const FlagSpec* flag = Find(name);
    if (flag == nullptr) {
      throw InvalidArgumentError("unknown flag '--" + std::string(name) + "'");
    }
    if (parsed.given_.count(flag->name)) {
      throw InvalidArgumentError("flag --" + flag->name + " given more than once");
    }
    std::string value;
    if (flag->value_name.empty()) {
      if (eq != std::string_view::npos) {
        throw InvalidArgumentError("flag --" + flag->name + " takes no value");
      }
      value = "true";
    } else if (eq != std::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else {
      // A following flag is not a value: `--from --to X` is a missing value, not from="--to".
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
        throw InvalidArgumentError("flag --" + flag->name + " needs a value (" + flag->value_name +
                                   ")");
      }
      value = args[++i];
    }
    if (value.empty() && !flag->value_name.empty()) {
      throw InvalidArgumentError("flag --" + flag->name + " has an empty value");
    }
    parsed.given_[flag->name] = true;
    parsed.values_[flag->name] = std::move(value);
  }
  for (const FlagSpec& flag : flags_) {
    if (parsed.values_.count(flag.name)) continue;
    if (flag.required) throw InvalidArgumentError("missing required flag --" + flag.name);
    if (!flag.default_value.empty()) parsed.values_[flag.name] = flag.default_value;
  }
  return parsed;
}

std::string ArgParser::Usage() const {
  std::ostringstream out;
  out << "usage: " << command_;
  for (const FlagSpec& flag : flags_) {
    std::string text = "--" + flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
    out << (flag.required ? " " + text : " [" + text + "]");
  }
  out << "\n\n" << summary_ << "\n";
  if (!flags_.empty()) out << "\noptions:\n";
  auto row = [&out](const std::string& left, const std::string& help) {
    out << "  " << left;
    if (left.size() < 26) {
      out << std::string(26 - left.size(), ' ');
    } else {
      out << "\n" << std::string(28, ' ');
    }
    out << help << "\n";
  };
  for (const FlagSpec& flag : flags_) {
    std::string help = flag.help;
    if (!flag.default_value.empty()) help += " (default " + flag.default_value + ")";
    row("--" + flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name), help);
  }
  row("-h, --help", "print this help and exit");
  if (!epilog_.empty()) out << "\n" << epilog_;
  return out.str();
}

int ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kShape:
    case ErrorKind::kSbp:
    case ErrorKind::kPlan:
      return 2;
    default:
      return 1;
  }
}

}  // namespace twinflow::launcher
