#pragma once
// Sbp: how one mesh axis lays a logical tensor out over its devices.
//   Split(axis)  each device holds a balanced slice along a tensor axis      text S(0)
//   Broadcast    each device holds the whole tensor                          text B
//   Partial(op)  each device holds a value; reducing them with op gives it   text P, P(max)
#include <string>
#include <string_view>

#include "engine/core/reduce_op.h"

namespace twinflow::sbp {

struct Sbp {
  enum class Kind { kSplit, kBroadcast, kPartial };

  Kind kind = Kind::kBroadcast;
  int axis = 0;                  // tensor axis, for kSplit
  ReduceOp op = ReduceOp::kSum;  // for kPartial

  static Sbp Split(int axis) { return Sbp{Kind::kSplit, axis, ReduceOp::kSum}; }
  static Sbp Broadcast() { return Sbp{Kind::kBroadcast, 0, ReduceOp::kSum}; }
  static Sbp Partial(ReduceOp op = ReduceOp::kSum) { return Sbp{Kind::kPartial, 0, op}; }

  bool is_split() const { return kind == Kind::kSplit; }
  bool is_broadcast() const { return kind == Kind::kBroadcast; }
  bool is_partial() const { return kind == Kind::kPartial; }

  std::string ToString() const;  // "S(0)", "B", "P", "P(max)"
  bool operator==(const Sbp& other) const;
  bool operator<(const Sbp& other) const;  // a total order, for stable enumeration
};

// Parses "S(1)", "B", "P", "P(sum)", "P(max)", "P(min)"; spaces are ignored. Throws SbpError.
Sbp ParseSbp(std::string_view text);

}  // namespace twinflow::sbp
