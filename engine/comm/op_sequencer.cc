#include "engine/comm/op_sequencer.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::comm {
namespace {

std::string Describe(int channel, const OpKey& key) {
  return "channel " + std::to_string(channel) + " operation (" + std::to_string(key.what) + ", " +
         std::to_string(key.order) + ", piece " + std::to_string(key.piece) + ")";
}

}  // namespace

OpSequencer::OpSequencer(int rank, std::vector<std::vector<int>> channel_ranks)
    : rank_(rank), channels_(std::move(channel_ranks)) {
  bool first = true;
  for (const std::vector<int>& ranks : channels_) {
    for (int r : ranks) {
      sequencer_ = first ? r : std::min(sequencer_, r);
      first = false;
    }
  }
}

bool OpSequencer::Member(int channel, int rank) const {
  if (channel < 0 || channel >= static_cast<int>(channels_.size())) return false;
  const std::vector<int>& ranks = channels_[static_cast<size_t>(channel)];
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

std::vector<SequencerMessage> OpSequencer::Ready(int channel, const OpKey& key) {
  if (!Member(channel, rank_)) {
    throw CommError("rank " + std::to_string(rank_) + " is not in " + Describe(channel, key));
  }
  if (!mine_.insert({channel, key}).second) {
    throw CommError(Describe(channel, key) + " was made ready twice on rank " +
                    std::to_string(rank_));
  }
  return {{SequencerMessageKind::kReady, sequencer_, channel, key}};
}

std::vector<SequencerMessage> OpSequencer::Receive(const SequencerMessage& message, int from) {
  const int channel = message.channel;
  const std::string what = Describe(channel, message.key);
  const bool is_go = message.kind == SequencerMessageKind::kGo;
  // A go comes from the sequencer to a member; a ready from a member to the sequencer.
  if (!Member(channel, is_go ? rank_ : from)) {
    throw CommError("rank " + std::to_string(rank_) + " got a message from rank " +
                    std::to_string(from) + " about " + what + ", which is not theirs");
  }
  const std::vector<int>& ranks = channels_[static_cast<size_t>(channel)];
  if (is_go) {
    if (from != sequencer_ || mine_.erase({channel, message.key}) == 0) {
      throw CommError("rank " + std::to_string(rank_) + " got a go from rank " +
                      std::to_string(from) + " for " + what + ", which it had not made ready");
    }
    issuable_.emplace_back(channel, message.key);
    return {};
  }
  if (rank_ != sequencer_) {
    throw CommError("rank " + std::to_string(rank_) + " is not the sequencer of " + what);
  }
  std::set<int>& ready = ready_[{channel, message.key}];
  if (!ready.insert(from).second) {
    throw CommError(what + " was made ready twice on rank " + std::to_string(from));
  }
  if (ready.size() < ranks.size()) return {};
  ready_.erase({channel, message.key});
  std::vector<SequencerMessage> go;
  for (int r : ranks) go.push_back({SequencerMessageKind::kGo, r, channel, message.key});
  return go;
}

std::vector<std::pair<int, OpKey>> OpSequencer::TakeIssuable() {
  std::vector<std::pair<int, OpKey>> out;
  out.swap(issuable_);
  return out;
}

std::vector<int> OpSequencer::Awaited(int channel, const OpKey& key) const {
  const auto it = ready_.find({channel, key});
  std::vector<int> awaited;
  for (int r : channels_.at(static_cast<size_t>(channel))) {
    if (it == ready_.end() || it->second.count(r) == 0) awaited.push_back(r);
  }
  return awaited;
}

std::vector<std::pair<int, OpKey>> OpSequencer::Waiting() const {
  return {mine_.begin(), mine_.end()};
}

}  // namespace twinflow::comm
