#pragma once
// The keys of a parsed torchtitan TOML as a table that remembers which ones were read, so that
// what the reader did not use can be reported key by key (models/torchtitan_config.h), and
// whose errors name the file and the key.
#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace twinflow::models {

class TomlKeys {
 public:
  TomlKeys(const toml::table& root, std::string path) : root_(root), path_(std::move(path)) {}

  // The value of [section] key, or nullptr when absent; marks it read.
  const toml::node* Find(const std::string& section, const std::string& key);
  bool Has(const std::string& section, const std::string& key) {
    return Find(section, key) != nullptr;
  }
  int64_t Int(const std::string& section, const std::string& key, int64_t fallback);
  std::string Text(const std::string& section, const std::string& key, const std::string& fallback);
  // A list of strings: a TOML array, or one string of comma-separated items (torchtitan takes
  // both); empty when absent.
  std::vector<std::string> Strings(const std::string& section, const std::string& key);
  // "[section] key", for messages ("key" at the top level).
  static std::string Name(const std::string& section, const std::string& key);
  // InvalidArgumentError "<path>: [section] key <what>".
  [[noreturn]] void Fail(const std::string& section, const std::string& key,
                         const std::string& what) const;
  // {section, key} of every value not read, in the file's order (a nested table's section is
  // its dotted name).
  std::vector<std::pair<std::string, std::string>> Unread() const;

 private:
  // The table [section] (a dotted name for a nested one; "" for the top level), or nullptr.
  const toml::table* Section(const std::string& section) const;
  void CollectUnread(const toml::table& table, const std::string& section,
                     std::vector<std::pair<std::string, std::string>>& out) const;

  const toml::table& root_;  // owned by the caller, who outlives this
  std::string path_;
  std::set<std::string> read_;  // "section.key"
};

}  // namespace twinflow::models
