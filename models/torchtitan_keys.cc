#include "models/torchtitan_keys.h"

#include <algorithm>
#include <sstream>
#include <tuple>

#include "engine/core/error.h"

namespace twinflow::models {

const toml::table* TomlKeys::Section(const std::string& section) const {
  return section.empty() ? &root_ : root_.at_path(section).as_table();
}

const toml::node* TomlKeys::Find(const std::string& section, const std::string& key) {
  const toml::table* table = Section(section);
  const toml::node* node = table == nullptr ? nullptr : table->get(key);
  if (node != nullptr) read_.insert(section + "." + key);
  return node;
}

int64_t TomlKeys::Int(const std::string& section, const std::string& key, int64_t fallback) {
  const toml::node* node = Find(section, key);
  if (node == nullptr) return fallback;
  if (!node->is_integer()) Fail(section, key, "is not an integer");
  return node->as_integer()->get();
}

std::string TomlKeys::Text(const std::string& section, const std::string& key,
                           const std::string& fallback) {
  const toml::node* node = Find(section, key);
  if (node == nullptr) return fallback;
  if (!node->is_string()) Fail(section, key, "is not a string");
  return node->as_string()->get();
}

std::vector<std::string> TomlKeys::Strings(const std::string& section, const std::string& key) {
  const toml::node* node = Find(section, key);
  std::vector<std::string> items;
  if (node == nullptr) return items;
  if (const toml::array* array = node->as_array()) {
    for (const toml::node& item : *array) {
      if (!item.is_string()) Fail(section, key, "is not a list of strings");
      items.push_back(item.as_string()->get());
    }
    return items;
  }
  if (!node->is_string()) Fail(section, key, "is not a list of strings");
  std::stringstream text(node->as_string()->get());
  for (std::string item; std::getline(text, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string TomlKeys::Name(const std::string& section, const std::string& key) {
  return section.empty() ? key : "[" + section + "] " + key;
}

void TomlKeys::Fail(const std::string& section, const std::string& key,
                    const std::string& what) const {
  throw InvalidArgumentError(path_ + ": [" + section + "] " + key + " " + what);
}

void TomlKeys::CollectUnread(const toml::table& table, const std::string& section,
                             std::vector<std::pair<std::string, std::string>>& out) const {
  for (const auto& [name, node] : table) {
    const std::string key(name.str());
    if (const toml::table* inner = node.as_table()) {
      CollectUnread(*inner, section.empty() ? key : section + "." + key, out);
    } else if (!read_.count(section + "." + key)) {
      out.emplace_back(section, key);
    }
  }
}

std::vector<std::pair<std::string, std::string>> TomlKeys::Unread() const {
  std::vector<std::pair<std::string, std::string>> unread;
  CollectUnread(root_, "", unread);
  // toml::table keeps its keys sorted; the file's order reads better.
  const auto position = [&](const std::pair<std::string, std::string>& item) {
    const toml::node* node = Section(item.first)->get(item.second);
    if (node == nullptr) return std::make_tuple(0u, 0u);
    const toml::source_position begin = node->source().begin;
    return std::make_tuple(begin.line, begin.column);
  };
  std::stable_sort(unread.begin(), unread.end(),
                   [&](const auto& a, const auto& b) { return position(a) < position(b); });
  return unread;
}

}  // namespace twinflow::models
