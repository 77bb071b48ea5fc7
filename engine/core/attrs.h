#pragma once
// Attrs: an op's named attributes (ints, floats, bools, strings, int lists). Ordered, so that
// printing and hashing are deterministic. Missing or mistyped attributes are errors naming
// the attribute.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace twinflow {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values) : values_(values) {}

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  Attrs& Set(const std::string& name, AttrValue value);

  // Throws InvalidArgumentError naming the attribute when it is missing or of another type.
  // GetDouble also accepts an integer value.
  int64_t GetInt(const std::string& name) const;
  double GetDouble(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;

  int64_t GetInt(const std::string& name, int64_t fallback) const;
  double GetDouble(const std::string& name, double fallback) const;
  bool GetBool(const std::string& name, bool fallback) const;

  const std::map<std::string, AttrValue>& values() const { return values_; }
  std::string ToString() const;  // "{axis=1, transpose_a=true}"
  bool operator==(const Attrs& other) const = default;

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace twinflow
