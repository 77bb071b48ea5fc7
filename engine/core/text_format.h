#pragma once
// Human-readable numbers and aligned text tables, for everything the CLI prints.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace twinflow {

std::string FormatBytes(int64_t bytes);             // "512 B", "1.5 KiB", "3.0 GiB"
std::string FormatSeconds(double seconds);          // "0 s", "12.5 us", "3.2 ms", "1.25 s"
std::string FormatFixed(double value, int digits);  // printf's %.*f

// Columns padded to their widest cell, two spaces apart, each line indented by two.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace twinflow
