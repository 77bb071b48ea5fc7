#pragma once
// NdSbp: one Sbp per axis of a placement's hierarchy (device mesh), applied in axis order.
#include <string>
#include <string_view>
#include <vector>

#include "engine/sbp/sbp.h"

namespace twinflow::sbp {

class NdSbp {
 public:
  NdSbp() = default;
  explicit NdSbp(std::vector<Sbp> sbps) : sbps_(std::move(sbps)) {}

  int size() const { return static_cast<int>(sbps_.size()); }
  const Sbp& operator[](int mesh_axis) const { return sbps_[mesh_axis]; }
  Sbp& operator[](int mesh_axis) { return sbps_[mesh_axis]; }
  const std::vector<Sbp>& sbps() const { return sbps_; }
  bool has_partial() const;

  // Throws SbpError naming the problem: a length different from the hierarchy rank, or a split
  // axis out of range for the tensor rank.
  void Validate(int tensor_rank, int hierarchy_rank) const;

  // "(S(0),B)"; a single axis prints bare, "S(0)", as on the command line.
  std::string ToString() const;
  bool operator==(const NdSbp& other) const = default;
  bool operator<(const NdSbp& other) const;

 private:
  std::vector<Sbp> sbps_;
};

// Parses "(S(0),B)", "(P)" or a bare single "S(0)". Throws SbpError.
NdSbp ParseNdSbp(std::string_view text);

}  // namespace twinflow::sbp
