#pragma once
// The flags of a Megatron-LM command line as a table that remembers which ones were read, so
// that what the reader did not use can be reported flag by flag (models/megatron_args.h).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace twinflow::models {

class MegatronFlags {
 public:
  // `words` are the command line's words (SplitShellWords); reading starts after the first word
  // ending in .py, or at the first word if none does. `switches` take no value; `valued` take
  // exactly one; any other flag takes the words up to the next --flag (Megatron's nargs='*',
  // as --data-path 0.5 a 0.5 b). InvalidArgumentError naming the flag: a switch given a value,
  // a valued flag without one, a word that is not a flag.
  MegatronFlags(const std::vector<std::string>& words, const std::set<std::string>& switches,
                const std::set<std::string>& valued);

  // Whether --name was given (the name without dashes); marks it read.
  bool Has(const std::string& name);
  // Its value (the last one given, as argparse keeps), or `fallback`; marks it read.
  std::string Text(const std::string& name, const std::string& fallback);
  // A positive integer (at most 2^40), or `fallback` when not given; InvalidArgumentError naming
  // the flag and the value otherwise.
  int64_t Size(const std::string& name, int64_t fallback);
  // The names not read, once each, in the order first given.
  std::vector<std::string> Unread() const;

 private:
  struct Flag {
    std::string name;
    std::string value;
    bool read = false;
  };
  std::vector<Flag> flags_;  // in the order given
};

}  // namespace twinflow::models
