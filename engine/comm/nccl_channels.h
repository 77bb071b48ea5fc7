#pragma once
// The NCCL transport's channels: each a fixed list of ranks with its own communicator and CUDA
// stream, on which its operations run in one order on every member (op_sequencer.h).
//   - a collective group that spans ranks: its ranks in member order (comm rank = member);
//   - a pair of ranks that SEND and RECV between: the lower rank first.
// Groups with the same ranks in the same order share a channel. Operations of different
// channels never wait for each other on a GPU (each channel has its own stream), so no order
// between channels is needed. Channels are made by ncclCommSplit of the world communicator in
// rounds: each round's channels are disjoint, so one split call per round makes them all (a
// rank in none passes NCCL_SPLIT_NOCOLOR). Pure: no NCCL here, so it is tested everywhere.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::comm {

struct Channel {
  std::vector<int> ranks;  // comm rank order
  int round = 0;           // the split call that makes it
};

struct ChannelPlan {
  std::vector<Channel> channels;
  std::map<int64_t, int> group_channel;             // CommGroup id (spanning ranks) -> channel
  std::map<std::pair<int, int>, int> pair_channel;  // (lower rank, higher rank) -> channel
  int rounds = 0;
  // The channel of a COLLECTIVE, SEND or RECV task (PlanError when it has none: in-process).
  int ChannelOf(const plan::Plan& plan, const plan::Task& task) const;
};

// PlanError naming the group when a group that spans ranks has two members on one rank (the
// NCCL path takes one device per rank).
ChannelPlan PlanChannels(const plan::Plan& plan);

}  // namespace twinflow::comm
