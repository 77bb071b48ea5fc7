#pragma once
// A small command-line parser shared by every `twinflow` command. A command declares its flags
// once; the same declaration parses argv and prints the usage text, so the two never drift.
//
// Accepted forms: `--name value`, `--name=value`, boolean `--name`, and `-h` / `--help`
// anywhere. Every mistake (unknown flag, missing value, missing required flag, a flag given
// twice, a stray argument) throws InvalidArgumentError naming the flag or the text, which the
// launcher turns into exit status 2.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::launcher {

struct FlagSpec {
  std::string name;        // without the dashes: "from"
  std::string value_name;  // shown in the usage ("LAYOUT"); empty for a boolean switch
  std::string help;
  bool required = false;
  std::string default_value;  // used when the flag is absent; empty means none
};

class ParsedArgs {
 public:
  bool help() const { return help_; }
  // Whether the flag was given on the command line (a default does not count).
  bool Given(const std::string& name) const { return given_.count(name) > 0; }
  // The value given, else the default; throws InvalidArgumentError when there is neither.
  const std::string& Get(const std::string& name) const;
  // The value as an integer in [min, max]; throws InvalidArgumentError naming the flag.
  int64_t GetInt(const std::string& name, int64_t min, int64_t max) const;
  // The value as a finite positive number; throws InvalidArgumentError naming the flag.
  double GetPositiveDouble(const std::string& name) const;

 private:
  friend class ArgParser;
  bool help_ = false;
  std::map<std::string, std::string> values_;  // given values and defaults
  std::map<std::string, bool> given_;
};

class ArgParser {
 public:
  // `command` is the full name shown in messages ("twinflow boxing").
  ArgParser(std::string command, std::string summary);

  ArgParser& Required(std::string name, std::string value_name, std::string help);
  ArgParser& Optional(std::string name, std::string value_name, std::string help,
                      std::string default_value = "");
  ArgParser& Switch(std::string name, std::string help);
  // Lines appended to the usage, such as examples.
  ArgParser& Epilog(std::string text);

  // `args` excludes the program and command names. When help is asked for, required flags are
  // not checked, so `twinflow boxing --help` works on its own.
  ParsedArgs Parse(const std::vector<std::string>& args) const;
  std::string Usage() const;

 private:
  const FlagSpec* Find(std::string_view name) const;

  std::string command_;
  std::string summary_;
  std::vector<FlagSpec> flags_;
  std::string epilog_;
};

// Runs `parse` and prefixes any error with the flag it came from ("--with: ...").
template <typename Fn>
auto FromFlag(const std::string& flag, Fn parse) {
  try {
    return parse();
  } catch (const Error& e) {
    RethrowPrefixed(e, "--" + flag + ": ");
  }
}

// `sim`'s exit status when the simulated Plan does not fit the devices' memory (docs/cli.md).
inline constexpr int kExitOutOfMemory = 3;

// The CLI's exit status for an error: 2 for bad input (arguments, shapes, layouts, Plans), 1
// for failures while running.
int ExitCodeFor(ErrorKind kind);

}  // namespace twinflow::launcher
