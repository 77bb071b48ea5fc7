#include "engine/sbp/sbp.h"

#include <cctype>
#include <charconv>
#include <tuple>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

std::string WithoutSpaces(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

[[noreturn]] void ThrowMalformed(std::string_view text) {
  throw SbpError("malformed sbp '" + std::string(text) +
                 "' (expected S(<axis>), B, P, P(sum), P(max) or P(min))");
}

}  // namespace

std::string Sbp::ToString() const {
  switch (kind) {
    case Kind::kSplit:
      return "S(" + std::to_string(axis) + ")";
    case Kind::kBroadcast:
      return "B";
    case Kind::kPartial:
      return op == ReduceOp::kSum ? "P" : "P(" + std::string(ReduceOpName(op)) + ")";
  }
  return "?";
}

// Only the field that matters for the kind takes part, so hand-built values compare sanely.
bool Sbp::operator==(const Sbp& other) const {
  if (kind != other.kind) return false;
  if (is_split()) return axis == other.axis;
  if (is_partial()) return op == other.op;
  return true;
}

bool Sbp::operator<(const Sbp& other) const {
  auto key = [](const Sbp& s) {
    return std::make_tuple(static_cast<int>(s.kind), s.is_split() ? s.axis : 0,
                           s.is_partial() ? static_cast<int>(s.op) : 0);
  };
  return key(*this) < key(other);
}

Sbp ParseSbp(std::string_view text) {
  const std::string s = WithoutSpaces(text);
  if (s == "B") return Sbp::Broadcast();
  if (s == "P") return Sbp::Partial();
  if (s.size() < 4 || s[1] != '(' || s.back() != ')') ThrowMalformed(text);
  const std::string_view inner = std::string_view(s).substr(2, s.size() - 3);
  if (s[0] == 'P') {
    try {
      return Sbp::Partial(ParseReduceOp(inner));
    } catch (const SbpError&) {
      throw SbpError("unknown reduce op '" + std::string(inner) + "' in sbp '" + std::string(text) +
                     "' (expected sum, max or min)");
    }
  }
  if (s[0] == 'S') {
    int axis = -1;
    const auto [end, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), axis);
    if (ec != std::errc() || end != inner.data() + inner.size()) ThrowMalformed(text);
    if (axis < 0) {
      throw SbpError("sbp '" + std::string(text) + "' splits a negative axis");
    }
    return Sbp::Split(axis);
  }
  ThrowMalformed(text);
}

}  // namespace twinflow::sbp
