// The NCCL transport's agreement on operation order (engine/comm/op_sequencer.h), over random
// channels, operations, readiness orders and message interleavings (each sender's messages to
// a receiver in order, as MPI delivers them): every member of a channel issues its operations
// in one and the same order, each exactly once, and only after every member had it ready; and
// any two ranks issue the operations they share, across all channels, in one order (so no two
// ranks can each block in a channel's operation the other has not reached).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "engine/comm/op_sequencer.h"

namespace twinflow::comm {
namespace {

struct World {
  int ranks = 0;
  std::vector<std::vector<int>> channels;
  std::vector<std::vector<std::pair<int, OpKey>>> ops;  // by rank: what it makes ready, in order
};

World DrawWorld() {
  World w;
  w.ranks = *rc::gen::inRange(2, 7);
  const int channels = *rc::gen::inRange(1, 5);
  for (int c = 0; c < channels; ++c) {
    std::vector<int> all(w.ranks);
    for (int r = 0; r < w.ranks; ++r) all[r] = r;
    std::vector<int> members = *rc::gen::container<std::vector<int>>(
        w.ranks, rc::gen::elementOf(all));  // then deduplicated, in drawn order
    std::vector<int> distinct;
    for (int r : members) {
      if (std::find(distinct.begin(), distinct.end(), r) == distinct.end()) distinct.push_back(r);
    }
    if (distinct.size() < 2) distinct = {0, 1};
    w.channels.push_back(distinct);
  }
  w.ops.resize(w.ranks);
  for (int c = 0; c < channels; ++c) {
    const int count = *rc::gen::inRange(1, 6);
    for (int k = 0; k < count; ++k) {
      const OpKey key{c, k, *rc::gen::inRange<int64_t>(0, 3)};
      for (int r : w.channels[c]) w.ops[r].emplace_back(c, key);
    }
  }
  // Each rank makes its operations ready in its own order.
  for (auto& mine : w.ops) {
    for (size_t i = mine.size(); i > 1; --i) {  // Fisher-Yates
      std::swap(mine[i - 1], mine[*rc::gen::inRange<size_t>(0, i)]);
    }
  }
  return w;
}

RC_GTEST_PROP(OpSequencerProperty, MembersIssueOneOrderOnlyOnceAllAreReady, ()) {
  const World w = DrawWorld();
  std::vector<OpSequencer> seq;
  for (int r = 0; r < w.ranks; ++r) seq.emplace_back(r, w.channels);
  std::map<std::pair<int, int>, std::deque<SequencerMessage>> wires;  // (from, to)
  std::map<std::pair<int, OpKey>, std::set<int>> ready;               // the truth
  std::map<std::pair<int, int>, std::vector<OpKey>> issued;           // (channel, rank)
  std::vector<std::vector<std::pair<int, OpKey>>> order(w.ranks);     // by rank, all channels
  std::vector<size_t> next(w.ranks, 0);
  const auto post = [&](int from, const std::vector<SequencerMessage>& out) {
    for (const SequencerMessage& m : out) wires[{from, m.to}].push_back(m);
  };
  const auto collect = [&](int r) {
    for (const auto& [channel, key] : seq[r].TakeIssuable()) {
      for (int member : w.channels[channel]) {
        RC_ASSERT((ready[{channel, key}].count(member) == 1u));  // all had it ready
      }
      issued[{channel, r}].push_back(key);
      order[r].emplace_back(channel, key);
    }
  };
  while (true) {
    // Either a rank makes its next operation ready, or a wire delivers its oldest message.
    std::vector<int> choices;
    for (int r = 0; r < w.ranks; ++r) {
      if (next[r] < w.ops[r].size()) choices.push_back(-1 - r);
    }
    std::vector<std::pair<int, int>> busy;
    for (const auto& [wire, q] : wires) {
      if (!q.empty()) busy.push_back(wire);
    }
    for (size_t i = 0; i < busy.size(); ++i) choices.push_back(static_cast<int>(i));
    if (choices.empty()) break;
    const int pick = *rc::gen::elementOf(choices);
    if (pick < 0) {
      const int r = -1 - pick;
      const auto& [channel, key] = w.ops[r][next[r]++];
      ready[{channel, key}].insert(r);
      post(r, seq[r].Ready(channel, key));
    } else {
      const auto [from, to] = busy[static_cast<size_t>(pick)];
      const SequencerMessage m = wires[{from, to}].front();
      wires[{from, to}].pop_front();
      post(to, seq[to].Receive(m, from));
      collect(to);
    }
  }
  for (size_t c = 0; c < w.channels.size(); ++c) {
    const std::vector<OpKey>& first = issued[{static_cast<int>(c), w.channels[c].front()}];
    for (int r : w.channels[c]) RC_ASSERT((issued[{static_cast<int>(c), r}] == first));
    std::set<OpKey> distinct(first.begin(), first.end());
    RC_ASSERT(distinct.size() == first.size());
  }
  for (int a = 0; a < w.ranks; ++a) {  // shared operations in one relative order
    for (int b = a + 1; b < w.ranks; ++b) {
      std::vector<std::pair<int, OpKey>> in_a, in_b;
      for (const auto& op : order[a]) {
        if (std::find(order[b].begin(), order[b].end(), op) != order[b].end()) in_a.push_back(op);
      }
      for (const auto& op : order[b]) {
        if (std::find(order[a].begin(), order[a].end(), op) != order[a].end()) in_b.push_back(op);
      }
      RC_ASSERT(in_a == in_b);
    }
  }
  for (int r = 0; r < w.ranks; ++r) {
    size_t total = 0;
    for (size_t c = 0; c < w.channels.size(); ++c) total += issued[{static_cast<int>(c), r}].size();
    RC_ASSERT(total == w.ops[r].size());  // everything went
    RC_ASSERT(seq[r].Waiting().empty());
  }
}

}  // namespace
}  // namespace twinflow::comm
