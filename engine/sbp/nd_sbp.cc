#include "engine/sbp/nd_sbp.h"

#include <algorithm>
#include <cctype>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

bool NdSbp::has_partial() const {
  return std::any_of(sbps_.begin(), sbps_.end(), [](const Sbp& s) { return s.is_partial(); });
}

void NdSbp::Validate(int tensor_rank, int hierarchy_rank) const {
  if (size() != hierarchy_rank) {
    throw SbpError("nd_sbp " + ToString() + " has " + Plural(size(), "entry", "entries") +
                   " but the hierarchy has " + Plural(hierarchy_rank, "axis", "axes"));
  }
  for (const Sbp& s : sbps_) {
    if (s.is_split() && (s.axis < 0 || s.axis >= tensor_rank)) {
      throw SbpError(s.ToString() + " splits axis " + std::to_string(s.axis) + " of a rank-" +
                     std::to_string(tensor_rank) + " tensor (in nd_sbp " + ToString() + ")");
    }
  }
}

std::string NdSbp::ToString() const {
  if (sbps_.size() == 1) return sbps_[0].ToString();
  std::string s = "(";
  for (size_t i = 0; i < sbps_.size(); ++i) {
    if (i) s += ",";
    s += sbps_[i].ToString();
  }
  return s + ")";
}

bool NdSbp::operator<(const NdSbp& other) const {
  return std::lexicographical_compare(sbps_.begin(), sbps_.end(), other.sbps_.begin(),
                                      other.sbps_.end());
}

NdSbp ParseNdSbp(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  if (s.empty()) throw SbpError("empty nd_sbp '" + std::string(text) + "'");
  // No single Sbp starts with '(', so a leading one always opens the list.
  if (s.front() != '(') return NdSbp({ParseSbp(s)});
  if (s.back() != ')' || s.size() < 3) {
    throw SbpError("malformed nd_sbp '" + std::string(text) + "' (expected e.g. (S(0),B))");
  }
  const auto entry = [&](size_t begin, size_t end) {
    if (begin == end) throw SbpError("empty entry in nd_sbp '" + std::string(text) + "'");
    return ParseSbp(std::string_view(s).substr(begin, end - begin));
  };
  std::vector<Sbp> sbps;
  int depth = 0;
  size_t start = 1;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth < 0) break;
    if (s[i] == ',' && depth == 0) {
      sbps.push_back(entry(start, i));
      start = i + 1;
    }
  }
  if (depth != 0) {
    throw SbpError("unbalanced parentheses in nd_sbp '" + std::string(text) + "'");
  }
  sbps.push_back(entry(start, s.size() - 1));
  return NdSbp(std::move(sbps));
}

}  // namespace twinflow::sbp
