#include "engine/core/text_format.h"

#include <algorithm>
#include <cstdio>

namespace twinflow {
namespace {

std::string Printf(const char* format, double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value, unit);
  return buf;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return Printf("%.1f %s", value, units[unit]);
}

std::string FormatSeconds(double seconds) {
  if (seconds <= 0) return "0 s";
  if (seconds < 1e-6) return Printf("%.1f %s", seconds * 1e9, "ns");
  if (seconds < 1e-3) return Printf("%.1f %s", seconds * 1e6, "us");
  if (seconds < 1.0) return Printf("%.1f %s", seconds * 1e3, "ms");
  return Printf("%.2f %s", seconds, "s");
}

void TextTable::Print(std::ostream& out) const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows_) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string FormatFixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace twinflow
