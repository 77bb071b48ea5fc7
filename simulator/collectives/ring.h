#pragma once
// Collective times on a ring of p devices over links of bandwidth B (times efficiency) and
// per-step latency a, for S bytes (the per-device buffer of all_reduce, reduce_scatter and
// all_to_all, the per-device output of all_gather, the payload of broadcast):
//   all_reduce      2 (p - 1) a + 2 (p - 1) / p * S / B
//   reduce_scatter  (p - 1) a + (p - 1) / p * S / B      (and all_gather, all_to_all)
//   broadcast       (p - 1) a + S / B                    (pipelined along the ring)
// A group spanning nodes runs a ring at its slowest link, or, for all-reduce over whole
// nodes of k devices each on n nodes, the hierarchical algorithm when faster (algorithms.h
// plans it):
//   reduce-scatter in each node, all-reduce of S/k between nodes, all-gather in each node
//   = 2 [(k-1) a_i + (k-1)/k S/B_i] + 2 (n-1) a_e + 2 (n-1)/n (S/k) / B_e
// These are the times on idle links; the simulator runs the same algorithms as flows that
// share links with whatever else is in flight (algorithms.h, network/link_network.h).
#include <cstdint>
#include <string>

#include "engine/core/collective_kind.h"
#include "simulator/hardware/cluster_spec.pb.h"

namespace twinflow::sim {

double RingCollectiveSeconds(CollectiveKind kind, int p, int64_t bytes, const Link& link);

}  // namespace twinflow::sim
