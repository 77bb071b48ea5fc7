#pragma once
// Layout: where a logical tensor lives (Placement) and how it is laid out there (NdSbp).
// Text form: the placement followed by the NdSbp, "cpu:0-3 [2,2] (S(0),B)" or "cpu:4-5 [2] P".
#include <string>
#include <string_view>

#include "engine/core/shape.h"
#include "engine/sbp/nd_sbp.h"
#include "engine/sbp/placement.h"

namespace twinflow::sbp {

struct Layout {
  Placement placement;
  NdSbp nd_sbp;

  // Throws SbpError when nd_sbp does not fit the hierarchy or a split axis the tensor's rank.
  void Validate(const Shape& logical_shape) const;
  std::string ToString() const;
  bool operator==(const Layout& other) const = default;
};

// Parses "<placement> <nd_sbp>". Throws SbpError.
Layout ParseLayout(std::string_view text);

}  // namespace twinflow::sbp
