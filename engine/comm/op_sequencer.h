#pragma once
// OpSequencer: one order per channel (nccl_channels.h) in which every member rank issues the
// channel's NCCL operations, agreed at run time, so that no collective can cross another and
// no operation is issued before all its members can run it.
//
// NCCL matches the operations of a communicator by the order each rank issues them in, and an
// issued operation occupies its stream until all members have issued it. The actors do not
// follow one order (independent collectives run as their inputs arrive, and a rank may see two
// ready in either order), so the order is agreed: each member tells the channel's leader (its
// first rank) when an operation is ready on it; once all members are, the leader appends it to
// the channel's sequence and tells every member "go"; members issue operations in the order
// the go messages come (the transport delivers one sender's messages in order). An operation
// goes only when every member has it ready, i.e. its inputs complete, so each issued operation
// completes, and those after it on the channel's stream in turn: no deadlock, whatever the
// order things become ready in.
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
  // `channel_ranks`: every channel's ranks, leader first, the same on every rank.
  OpSequencer(int rank, std::vector<std::vector<int>> channel_ranks);

  // This rank has `key` of `channel` ready: the messages to deliver.
  std::vector<SequencerMessage> Ready(int channel, const OpKey& key);
  // A message `from` a rank (or this one): the messages it leads to. A go for this rank is not
  // returned: it is appended to Issuable. CommError when the message makes no sense (a go for an
  // operation this rank never had ready, a channel this rank is not in).
  std::vector<SequencerMessage> Receive(const SequencerMessage& message, int from);
  // The operations this rank may issue now, in issue order, each once.
  std::vector<std::pair<int, OpKey>> TakeIssuable();

  // As the leader: the members `key` of `channel` still waits for (for stall reports).
  std::vector<int> Awaited(int channel, const OpKey& key) const;
  // Ready here, not yet gone: (channel, key), for stall reports.
  std::vector<std::pair<int, OpKey>> Waiting() const;

 private:
  bool Member(int channel, int rank) const;

  int rank_;
  std::vector<std::vector<int>> channels_;
  std::map<std::pair<int, OpKey>, std::set<int>> ready_;  // as leader: who has it ready
  std::set<std::pair<int, OpKey>> mine_;                  // ready here, no go yet
  std::vector<std::pair<int, OpKey>> issuable_;
};

}  // namespace twinflow::comm
