#pragma once
// OpSequencer: one order in which every rank issues the NCCL operations of its channels
// (nccl_channels.h), agreed at run time, so that no collective can cross another and no
// operation is issued before all its members can run it.
//
// NCCL matches the operations of a communicator by the order each rank issues them in, and an
// issued operation occupies its stream until all members have issued it; a channel's first
// operation may even block its caller until every member calls it (NCCL connects lazily). The
// actors do not follow one order (independent collectives run as their inputs arrive, and a
// rank may see two ready in either order), so the order is agreed: each member tells the
// sequencer (the lowest rank of any channel, the same for all channels) when an operation is
// ready on it; once all members are, the sequencer tells every member "go"; members issue
// operations in the order the go messages come (the transport delivers one sender's messages
// in order). So there is one global order, every rank issuing its share of it in that order:
// an operation goes only when every member has it ready, and every member reaches it after
// the operations before it, which complete for the same reason. No deadlock, whatever the
// order things become ready in; with one leader per channel, two ranks could issue two
// channels' first operations in opposite orders and block each other.
//
// Pure bookkeeping: the caller carries the messages between ranks (the NCCL transport, over
// MPI) and issues what Go says.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace twinflow::comm {

// An operation of a channel: (what, order, piece), the same on every member. For a collective
// (Plan group, issue order, piece); for a SEND/RECV pair (-1 - tag, 0, piece).
struct OpKey {
  int64_t what = 0;
  int64_t order = 0;
  int64_t piece = 0;
  bool operator<(const OpKey& o) const {
    return std::tie(what, order, piece) < std::tie(o.what, o.order, o.piece);
  }
  bool operator==(const OpKey& o) const {
    return what == o.what && order == o.order && piece == o.piece;
  }
};

enum class SequencerMessageKind { kReady, kGo };

struct SequencerMessage {
  SequencerMessageKind kind = SequencerMessageKind::kReady;
  int to = 0;  // the receiving rank (may be this rank: the caller hands it back to Receive)
  int channel = 0;
  OpKey key;
};

class OpSequencer {
 public:
  // `channel_ranks`: every channel's ranks, the same on every rank.
  OpSequencer(int rank, std::vector<std::vector<int>> channel_ranks);

  // This rank has `key` of `channel` ready: the messages to deliver.
  std::vector<SequencerMessage> Ready(int channel, const OpKey& key);
  // A message `from` a rank (or this one): the messages it leads to. A go for this rank is not
  // returned: it is appended to Issuable. CommError when the message makes no sense (a go for an
  // operation this rank never had ready, a channel this rank is not in).
  std::vector<SequencerMessage> Receive(const SequencerMessage& message, int from);
  // The operations this rank may issue now, in issue order, each once.
  std::vector<std::pair<int, OpKey>> TakeIssuable();

  // The rank that orders every channel's operations.
  int sequencer() const { return sequencer_; }
  // As the sequencer: the members `key` of `channel` still waits for (for stall reports).
  std::vector<int> Awaited(int channel, const OpKey& key) const;
  // Ready here, not yet gone: (channel, key), for stall reports.
  std::vector<std::pair<int, OpKey>> Waiting() const;

 private:
  bool Member(int channel, int rank) const;

  int rank_;
  std::vector<std::vector<int>> channels_;
  int sequencer_ = 0;                                     // the lowest rank of any channel
  std::map<std::pair<int, OpKey>, std::set<int>> ready_;  // as sequencer: who has it ready
  std::set<std::pair<int, OpKey>> mine_;                  // ready here, no go yet
  std::vector<std::pair<int, OpKey>> issuable_;
};

}  // namespace twinflow::comm
