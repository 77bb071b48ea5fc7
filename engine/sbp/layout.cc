#include "engine/sbp/layout.h"

#include <cctype>

#include "engine/core/error.h"

namespace twinflow::sbp {

void Layout::Validate(const Shape& logical_shape) const {
  const Shape& hierarchy = placement.hierarchy();
  const auto where = [&] {
    return " in layout " + ToString() + " of a tensor of shape " + logical_shape.ToString();
  };
  if (nd_sbp.size() != hierarchy.rank()) {
    const int n = nd_sbp.size(), r = hierarchy.rank();
    throw SbpError("nd_sbp " + nd_sbp.ToString() + " has " + std::to_string(n) +
                   (n == 1 ? " entry" : " entries") + " but the hierarchy " + hierarchy.ToString() +
                   " has " + std::to_string(r) + (r == 1 ? " axis" : " axes") + where());
  }
  try {
    nd_sbp.Validate(logical_shape.rank(), hierarchy.rank());
  } catch (const SbpError& e) {
    throw SbpError(e.message() + where());  // the same problem, with the layout named
  }
}

std::string Layout::ToString() const { return placement.ToString() + " " + nd_sbp.ToString(); }

Layout ParseLayout(std::string_view text) {
  // The placement is "<type>:<ids> [<hierarchy>]"; ids hold only digits, '-', ',' and blanks, and
  // an nd_sbp starts with '(' or a letter, so the split point is unambiguous.
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw SbpError("malformed layout '" + std::string(text) +
                   "' (expected <placement> <nd_sbp>, e.g. cpu:0-3 [2,2] (S(0),B))");
  }
  size_t end = colon + 1;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                               std::isspace(static_cast<unsigned char>(text[end])) ||
                               text[end] == '-' || text[end] == ',')) {
    ++end;
  }
  if (end < text.size() && text[end] == '[') {
    const size_t close = text.find(']', end);
    end = close == std::string_view::npos ? text.size() : close + 1;
  }
  const std::string_view rest = text.substr(end);
  bool blank = true;
  for (char c : rest) blank = blank && std::isspace(static_cast<unsigned char>(c));
  if (blank) {
    throw SbpError("layout '" + std::string(text) + "' has no nd_sbp after its placement");
  }
  return Layout{ParsePlacement(text.substr(0, end)), ParseNdSbp(rest)};
}

}  // namespace twinflow::sbp
