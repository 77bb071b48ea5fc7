#include "engine/core/attrs.h"

#include <sstream>

#include "engine/core/error.h"

namespace twinflow {
namespace {

template <typename T>
const T& Get(const std::map<std::string, AttrValue>& values, const std::string& name,
             const char* type_name) {
  const auto it = values.find(name);
  if (it == values.end()) throw InvalidArgumentError("missing attribute '" + name + "'");
  const T* value = std::get_if<T>(&it->second);
  if (!value) {
    throw InvalidArgumentError("attribute '" + name + "' is not " + type_name);
  }
  return *value;
}

}  // namespace

Attrs& Attrs::Set(const std::string& name, AttrValue value) {
  values_[name] = std::move(value);
  return *this;
}

int64_t Attrs::GetInt(const std::string& name) const {
  return Get<int64_t>(values_, name, "an integer");
}

double Attrs::GetDouble(const std::string& name) const {
  const auto it = values_.find(name);
  if (it != values_.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return Get<double>(values_, name, "a number");
}

bool Attrs::GetBool(const std::string& name) const { return Get<bool>(values_, name, "a bool"); }

const std::string& Attrs::GetString(const std::string& name) const {
  return Get<std::string>(values_, name, "a string");
}

const std::vector<int64_t>& Attrs::GetInts(const std::string& name) const {
  return Get<std::vector<int64_t>>(values_, name, "a list of integers");
}

int64_t Attrs::GetInt(const std::string& name, int64_t fallback) const {
  return Has(name) ? GetInt(name) : fallback;
}

double Attrs::GetDouble(const std::string& name, double fallback) const {
  return Has(name) ? GetDouble(name) : fallback;
}

bool Attrs::GetBool(const std::string& name, bool fallback) const {
  return Has(name) ? GetBool(name) : fallback;
}

std::string Attrs::ToString() const {
  std::ostringstream out;
  out << "{";
  bool first = true;
  for (const auto& [name, value] : values_) {
    if (!first) out << ", ";
    first = false;
    out << name << "=";
    if (const auto* i = std::get_if<int64_t>(&value)) out << *i;
    if (const auto* d = std::get_if<double>(&value)) out << *d;
    if (const auto* b = std::get_if<bool>(&value)) out << (*b ? "true" : "false");
    if (const auto* s = std::get_if<std::string>(&value)) out << '"' << *s << '"';
    if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
      out << "[";
      for (size_t k = 0; k < list->size(); ++k) out << (k ? "," : "") << (*list)[k];
      out << "]";
    }
  }
  out << "}";
  return out.str();
}

}  // namespace twinflow
