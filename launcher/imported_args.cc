#include "launcher/imported_args.h"

#include <algorithm>
#include <optional>
#include <set>

#include "engine/core/error.h"
#include "models/megatron_args.h"
#include "models/torchtitan_config.h"

namespace twinflow::launcher {
namespace {

// The import flag in `args` (its value), removing it; nullopt when absent.
std::optional<std::string> TakeFlag(std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" + flag) {
      if (i + 1 >= args.size()) throw InvalidArgumentError("--" + flag + " needs a value");
      std::string value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      return value;
    }
    if (args[i].rfind("--" + flag + "=", 0) == 0) {
      std::string value = args[i].substr(flag.size() + 3);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return value;
    }
  }
  return std::nullopt;
}

// The flags the command line gives itself ("--layers 2" and "--layers=2" alike).
std::set<std::string> GivenFlags(const std::vector<std::string>& args) {
  std::set<std::string> given;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) == 0)
      given.insert(
          a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2));
  }
  return given;
}

// The strategy fields tune varies itself.
bool TuneVaries(const std::string& field) {
  static const std::set<std::string> varied = {"dp", "tp", "pp", "vp", "mb", "schedule", "sp"};
  return varied.count(field) > 0;
}

}  // namespace

std::vector<std::string> ExpandImportedJob(const std::vector<std::string>& given, ImportUse use,
                                           std::ostream& note) {
  std::vector<std::string> args = given;
  const std::optional<std::string> megatron = TakeFlag(args, "megatron-args");
  const std::optional<std::string> titan = TakeFlag(args, "torchtitan");
  if (!megatron && !titan) return given;
  if (megatron && titan) {
    throw InvalidArgumentError("--megatron-args and --torchtitan both describe the job; give one");
  }
  const models::ImportedJob job =
      megatron ? models::ParseMegatronArgs(*megatron) : models::ReadTorchtitanConfig(*titan);
  const std::set<std::string> mine = GivenFlags(args);
  std::vector<std::pair<std::string, std::string>> flags = {{"model", job.model}};
  for (const auto& flag : job.flags) flags.push_back(flag);
  std::string strategy, left_out;
  for (const auto& [field, value] : job.strategy) {
    const bool varied = use == ImportUse::kTune && TuneVaries(field);
    std::string& into = varied ? left_out : strategy;
    into += (into.empty() ? "" : ",") + field + "=" + value;
  }
  if (use == ImportUse::kTune) {
    left_out += std::string(left_out.empty() ? "" : ",") + "micro-batch-size";
    flags.erase(std::remove_if(flags.begin(), flags.end(),
                               [](const auto& f) { return f.first == "micro-batch-size"; }),
                flags.end());
  }
  if (!strategy.empty()) flags.push_back({use == ImportUse::kTune ? "with" : "strategy", strategy});
  for (const auto& [flag, value] : flags) {
    if (mine.count(flag)) {
      throw InvalidArgumentError("--" + flag + " is given on the command line and by " +
                                 job.source + " (" + flag + " " + value + "); give it once");
    }
    args.push_back("--" + flag);
    args.push_back(value);
  }
  note << job.source << ": model " << job.model;
  for (const auto& [flag, value] : job.flags) note << " --" << flag << " " << value;
  note << "\n" << job.source << ": strategy " << (strategy.empty() ? "(defaults)" : strategy);
  if (!left_out.empty()) note << " (tune varies " << left_out << " itself)";
  note << "\n";
  if (!job.ignored.empty()) {
    note << job.source << ": ignored (no cost here):";
    for (size_t i = 0; i < job.ignored.size(); ++i) note << (i ? "; " : " ") << job.ignored[i];
    note << "\n";
  }
  return args;
}

}  // namespace twinflow::launcher
