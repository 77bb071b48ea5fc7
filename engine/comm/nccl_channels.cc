#include "engine/comm/nccl_channels.h"

#include <algorithm>
#include <set>
#include <string>

#include "engine/core/error.h"

namespace twinflow::comm {
namespace {

// The channel with these ranks, made if new.
int Find(ChannelPlan& plan, std::map<std::vector<int>, int>& by_ranks, std::vector<int> ranks) {
  const auto [it, fresh] = by_ranks.emplace(ranks, static_cast<int>(plan.channels.size()));
  if (fresh) plan.channels.push_back({std::move(ranks), 0});
  return it->second;
}

// Greedy rounds: a channel goes to the first round none of whose channels shares a rank.
void AssignRounds(ChannelPlan& plan) {
  std::vector<std::set<int>> busy;  // by round: the ranks its channels hold
  for (Channel& c : plan.channels) {
    size_t round = 0;
    while (round < busy.size() && std::any_of(c.ranks.begin(), c.ranks.end(),
                                              [&](int r) { return busy[round].count(r) > 0; })) {
      ++round;
    }
    if (round == busy.size()) busy.emplace_back();
    busy[round].insert(c.ranks.begin(), c.ranks.end());
    c.round = static_cast<int>(round);
  }
  plan.rounds = static_cast<int>(busy.size());
}

}  // namespace

ChannelPlan PlanChannels(const plan::Plan& plan) {
  ChannelPlan channels;
  std::map<std::vector<int>, int> by_ranks;
  for (const plan::CommGroup& g : plan.groups()) {
    std::vector<int> ranks;
    for (int d : g.devices()) ranks.push_back(plan.devices(d).rank());
    const std::set<int> distinct(ranks.begin(), ranks.end());
    if (distinct.size() == 1) continue;  // in-process
    if (distinct.size() != ranks.size()) {
      throw PlanError("comm group " + std::to_string(g.id()) +
                      " has two members on one rank: the NCCL path takes one device per rank");
    }
    channels.group_channel[g.id()] = Find(channels, by_ranks, ranks);
  }
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::SEND) continue;
    const int a = plan.devices(t.device()).rank();
    const int b = plan.devices(t.peer()).rank();
    const std::pair<int, int> pair{std::min(a, b), std::max(a, b)};
    if (channels.pair_channel.count(pair) == 0) {
      channels.pair_channel[pair] = Find(channels, by_ranks, {pair.first, pair.second});
    }
  }
  AssignRounds(channels);
  return channels;
}

int ChannelPlan::ChannelOf(const plan::Plan& plan, const plan::Task& task) const {
  if (task.kind() == plan::COLLECTIVE) {
    const auto it = group_channel.find(task.collective().group());
    if (it != group_channel.end()) return it->second;
  } else if (task.kind() == plan::SEND || task.kind() == plan::RECV) {
    const int a = plan.devices(task.device()).rank();
    const int b = plan.devices(task.peer()).rank();
    const auto it = pair_channel.find({std::min(a, b), std::max(a, b)});
    if (it != pair_channel.end()) return it->second;
  }
  throw PlanError("task '" + task.name() + "' has no NCCL channel (it does not cross ranks)");
}

}  // namespace twinflow::comm
