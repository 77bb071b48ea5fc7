#include "engine/comm/mpi_transport.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>

#include "engine/comm/chain_all_reduce.h"
#include "engine/comm/mpi_types.h"
#include "engine/comm/sink_exchange.h"
#include "engine/comm/task_descs.h"
#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/collective_compute.h"
#include "engine/runtime/host_device.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::comm {
namespace {

// A tensor of shape `shape` cut along `axis` into chunks of `extents` (one per member, in
// order): Pack lays the chunks one after another, Unpack puts them back.
struct AxisChunks {
  int64_t outer = 1;  // product of the extents before the axis
  int64_t inner = 1;  // elements after the axis, times the element size in bytes
  int64_t along = 0;  // the axis' extent
  std::vector<int64_t> extents;
  AxisChunks(const Shape& shape, int axis, std::vector<int64_t> chunk_extents, int64_t element)
      : extents(std::move(chunk_extents)) {
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    inner = element;
    for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
    along = shape[axis];
  }
  template <bool kPack>
  void Move(const std::byte* from, std::byte* to) const {
    int64_t offset = 0;  // along the axis
    std::byte* packed = kPack ? to : nullptr;
    const std::byte* packed_in = kPack ? nullptr : from;
    for (int64_t k : extents) {
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t full = (o * along + offset) * inner;
        const int64_t bytes = k * inner;
        if (kPack) {
          std::copy_n(from + full, bytes, packed);
          packed += bytes;
        } else {
          std::copy_n(packed_in, bytes, to + full);
          packed_in += bytes;
        }
      }
      offset += k;
    }
  }
};

}  // namespace

MpiTransport::MpiTransport(const plan::Plan& plan, const MpiSession& session)
    : plan_(plan), rank_(session.rank()), size_(session.size()), local_rank_(session.local_rank()) {
  void* value = nullptr;
  int found = 0;
  CheckMpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr");
  tag_limit_ = found ? *static_cast<int*>(value) : 32767;
  for (const plan::Task& t : plan.tasks()) {
    // The two highest tags are the liveness probe's.
    if (t.kind() == plan::SEND && (t.tag() + 1) * kPieceWindow - 1 > tag_limit_ - 2) {
      throw PlanError("task '" + t.name() + "' has tag " + std::to_string(t.tag()) +
                      ", beyond what MPI's tags can carry here");
    }
  }
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::COLLECTIVE) continue;
    CollectiveComm& c = comms_[{t.collective().group(), t.issue_order()}];
    const int size = plan.groups(static_cast<int>(t.collective().group())).devices_size();
    c.members.resize(static_cast<size_t>(size), nullptr);
    c.members.at(static_cast<size_t>(t.collective().member())) = &t;
  }
  // One communicator per collective that spans ranks, split in the same order on every rank.
  for (auto it = comms_.begin(); it != comms_.end();) {
    CollectiveComm& c = it->second;
    std::map<int, std::vector<int>> by_rank;  // rank -> member indices
    for (size_t m = 0; m < c.members.size(); ++m) {
      by_rank[plan.devices(c.members[m]->device()).rank()].push_back(static_cast<int>(m));
    }
    if (by_rank.size() == 1) {  // in-process
      it = comms_.erase(it);
      continue;
    }
    const auto mine = by_rank.find(rank_);
    const int color = mine == by_rank.end() ? MPI_UNDEFINED : 0;
    const int key = mine == by_rank.end() ? 0 : mine->second.front();
    CheckMpi(MPI_Comm_split(MPI_COMM_WORLD, color, key, &c.comm), "MPI_Comm_split");
    std::vector<std::vector<int>> ordered;
    for (auto& [r, members] : by_rank) ordered.push_back(members);
    std::sort(ordered.begin(), ordered.end());  // by first member: the split's key order
    c.by_comm_rank = ordered;
    c.one_member_per_rank = ordered.size() == c.members.size();
    if (c.comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
    ++it;
  }
}

MpiTransport::~MpiTransport() {
  End();
  for (auto& [key, c] : comms_) {
    if (c.comm != MPI_COMM_NULL) MPI_Comm_free(&c.comm);
  }
}

void MpiTransport::Begin(Fail fail) {
  End();
  std::lock_guard<std::mutex> lock(mutex_);
  stop_ = false;
  fail_ = std::move(fail);
  in_flight_.clear();
  thread_ = std::thread([this] { Loop(); });
}

void MpiTransport::End() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MpiTransport::Enqueue(std::string what, Op op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op.id = next_op_++;
    in_flight_[op.id] = "MPI: " + what;
    pending_.push_back(std::move(op));
  }
  wake_.notify_all();
}

void MpiTransport::Loop() {
  std::vector<Op> active;
  Probe probe;
  bool failed = false;
  while (true) {
    std::vector<Op> fresh;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (active.empty() || failed) {
        wake_.wait_for(lock, std::chrono::milliseconds(50),
                       [this] { return stop_ || !pending_.empty() || probe_wanted_; });
      }
      if (stop_) return;  // a finished run has nothing in flight; a failed one is abandoned
      fresh.swap(pending_);
    }
    if (failed) continue;
    try {
      ServeProbes(probe);
      for (Op& op : fresh) {
        op.start(&op.request);
        active.push_back(std::move(op));
      }
      bool progressed = false;
      for (size_t i = 0; i < active.size();) {
        int flag = 0;
        MPI_Status status{};
        if (active[i].poll) {
          flag = active[i].poll() ? 1 : 0;
        } else {
          CheckMpi(MPI_Test(&active[i].request, &flag, &status), "MPI_Test");
        }
        if (!flag) {
          ++i;
          continue;
        }
        Op op = std::move(active[i]);
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
        op.finish(status);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          in_flight_.erase(op.id);
        }
        progressed = true;
      }
      if (!progressed && fresh.empty()) std::this_thread::yield();
    } catch (...) {
      failed = true;
      if (fail_) fail_(std::current_exception());
    }
  }
}

int MpiTransport::Tag(const plan::Task& task, int64_t piece) const {
  return static_cast<int>(task.tag() * kPieceWindow + piece % kPieceWindow);
}

int MpiTransport::PeerRank(const plan::Task& task) const {
  return plan_.devices(task.peer()).rank();
}

void MpiTransport::Send(const plan::Task& send, int64_t piece, std::vector<std::byte> payload,
                        Done done) {
  auto buffer = std::make_shared<std::vector<std::byte>>(std::move(payload));
  const int peer = PeerRank(send);
  const int tag = Tag(send, piece);
  Enqueue("task '" + send.name() + "' piece " + std::to_string(piece) + " sending " +
              std::to_string(buffer->size()) + " bytes to rank " + std::to_string(peer),
          {[buffer, peer, tag](MPI_Request* request) {
             CheckMpi(MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, peer,
                                tag, MPI_COMM_WORLD, request),
                      "MPI_Isend");
           },
           [buffer, done](const MPI_Status&) { done(); }});
}

void MpiTransport::Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) {
  const int peer = PeerRank(recv);
  const int tag = Tag(recv, piece);
  const std::string name = recv.name();
  auto view = std::make_shared<Tensor>(std::move(slot));
  Enqueue("task '" + name + "' piece " + std::to_string(piece) + " receiving " +
              std::to_string(view->nbytes()) + " bytes from rank " + std::to_string(peer),
          {[view, peer, tag](MPI_Request* request) {
             CheckMpi(MPI_Irecv(view->raw(), static_cast<int>(view->nbytes()), MPI_BYTE, peer, tag,
                                MPI_COMM_WORLD, request),
                      "MPI_Irecv");
           },
           [view, done, name, peer, piece](const MPI_Status& status) {
             int count = 0;
             MPI_Get_count(&status, MPI_BYTE, &count);
             if (count != static_cast<int>(view->nbytes())) {
               throw CommError("task '" + name + "' piece " + std::to_string(piece) + ": rank " +
                               std::to_string(peer) + " sent " + std::to_string(count) +
                               " bytes, expected " + std::to_string(view->nbytes()));
             }
             done();
           }});
}

void MpiTransport::Collective(const plan::Task& task, int64_t piece,
                              std::vector<runtime::CollectiveMember> local, Done done) {
  const auto it = comms_.find({task.collective().group(), task.issue_order()});
  if (it == comms_.end() || it->second.comm == MPI_COMM_NULL) {
    throw CommError("task '" + task.name() + "' has no communicator on rank " +
                    std::to_string(rank_));
  }
  const CollectiveComm& c = it->second;
  const plan::CollectiveDesc desc = task.collective();
  // The transport's one reading of the kind: the fast paths below test it, the general path
  // hands it to ComputeCollective.
  const CollectiveKind kind = plan::FromProto(desc.kind(), "task '" + task.name() + "'");
  const ReduceOp op =
      plan::FromProto(desc.reduce_op(), "task '" + task.name() + "'").value_or(ReduceOp::kSum);
  const std::string what = "task '" + task.name() + "' piece " + std::to_string(piece) + ": " +
                           CollectiveKindName(kind) + " with the other ranks of comm group " +
                           std::to_string(desc.group());
  auto members = std::make_shared<std::vector<runtime::CollectiveMember>>(std::move(local));
  const bool one_each = c.one_member_per_rank && members->size() == 1;
  if (members->front().tensors.size() > 1) {  // a bucket TakesBucket took: the chain, in place
    if (!one_each || kind != CollectiveKind::kAllReduce) {
      throw CommError(what + ": a bucket of " + std::to_string(members->front().tensors.size()) +
                      " tensors the MPI transport cannot take unpacked");
    }
    Enqueue(what, ChainAllReduceOp(members, op, c, std::move(done)));
    return;
  }
  const runtime::CollectiveTensors& one = members->front().one();
  const Tensor& in = one.input;
  const bool mpi_type = MpiType(in.dtype()) != MPI_DATATYPE_NULL;
  // Large all-reduces go down a chain of point-to-point chunks on two ranks, and on more when
  // in place, where Open MPI's own is slowest (chain_all_reduce.h).
  const bool chain = static_cast<int64_t>(in.nbytes()) >= ChainAllReduce::kChunkBytes &&
                     (c.by_comm_rank.size() == 2 || in.raw() == one.output.raw());
  if (one_each && kind == CollectiveKind::kAllReduce && mpi_type && chain) {
    Enqueue(what, ChainAllReduceOp(members, op, c, std::move(done)));
  } else if (one_each && kind == CollectiveKind::kAllReduce && mpi_type) {
    Enqueue(what, AllReduceOp(members, op, c.comm, std::move(done)));
  } else if (one_each && kind == CollectiveKind::kAllGather) {
    Enqueue(what, AllGatherOp(task, c, members, std::move(done)));
  } else if (one_each && kind == CollectiveKind::kReduceScatter && mpi_type) {
    Enqueue(what, ReduceScatterOp(task, c, members, op, std::move(done)));
  } else if (one_each && kind == CollectiveKind::kAllToAll &&
             desc.scatter_axis() != desc.gather_axis()) {
    Enqueue(what, AllToAllOp(task, c, members, std::move(done)));
  } else {
    Enqueue(what, GatherAndComputeOp(task, c, members, op, std::move(done)));
  }
}

bool MpiTransport::TakesBucket(const plan::Task& task) const {
  // The chain reduces a bucket's tensors where they lie, one member per rank, in place, when
  // large enough to take it; any other bucket comes packed into one host buffer.
  const auto it = comms_.find({task.collective().group(), task.issue_order()});
  if (it == comms_.end() || !it->second.one_member_per_rank || !task.collective().in_place())
    return false;
  const plan::TensorDesc packed = InputDesc(plan_, task);
  return MpiType(runtime::ToDType(packed.dtype(), task.name())) != MPI_DATATYPE_NULL &&
         BytesOf(packed, task.name()) >= ChainAllReduce::kChunkBytes;
}

MpiTransport::Op MpiTransport::AllReduceOp(const Members& members, ReduceOp op, MPI_Comm comm,
                                           Done done) {
  // In place (CollectiveDesc.in_place), the input goes to a copy first: Open MPI's
  // MPI_IN_PLACE path is several times slower, and these buffers are small (under
  // ChainAllReduce::kChunkBytes).
  auto copy = std::make_shared<std::vector<std::byte>>();
  return {[members, op, comm, copy](MPI_Request* request) {
            runtime::CollectiveTensors& m = members->front().one();
            const std::byte* send = m.input.raw();
            if (send == m.output.raw()) {
              copy->assign(send, send + m.input.nbytes());
              send = copy->data();
            }
            CheckMpi(MPI_Iallreduce(send, m.output.raw(), static_cast<int>(m.input.numel()),
                                    MpiType(m.input.dtype()), MpiOp(op), comm, request),
                     "MPI_Iallreduce");
          },
          [members, copy, done](const MPI_Status&) { done(); }};
}

MpiTransport::Op MpiTransport::ChainAllReduceOp(const Members& members, ReduceOp op,
                                                const CollectiveComm& c, Done done) {
  auto chain = std::make_shared<ChainAllReduce>(members->front().tensors, op, c.comm, *c.scratch);
  Op result;
  result.start = [chain, scratch = c.scratch](MPI_Request*) { chain->Start(); };
  result.poll = [chain] { return chain->Progress(); };
  result.finish = [members, chain, done](const MPI_Status&) { done(); };
  return result;
}

MpiTransport::Op MpiTransport::AllGatherOp(const plan::Task& task, const CollectiveComm& c,
                                           const Members& members, Done done) const {
  // Every rank's input lands packed by rank; each rank unpacks along the gather axis.
  const int axis = task.collective().gather_axis();
  std::vector<int64_t> extents;
  auto counts = std::make_shared<std::vector<int>>();
  auto displs = std::make_shared<std::vector<int>>();
  int total = 0;
  for (const std::vector<int>& m : c.by_comm_rank) {
    const plan::TensorDesc& chunk = InputDesc(plan_, *c.members[m.front()]);
    extents.push_back(runtime::ToShape(chunk, task.name())[axis]);
    displs->push_back(total);
    counts->push_back(static_cast<int>(BytesOf(chunk, task.name())));
    total += counts->back();
  }
  runtime::CollectiveTensors& m = members->front().one();
  auto layout =
      std::make_shared<AxisChunks>(m.output.shape(), axis, extents, DTypeSize(m.output.dtype()));
  auto packed = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(total));
  const MPI_Comm comm = c.comm;
  return {[members, packed, counts, displs, comm](MPI_Request* request) {
            runtime::CollectiveTensors& m = members->front().one();
            CheckMpi(MPI_Iallgatherv(m.input.raw(), static_cast<int>(m.input.nbytes()), MPI_BYTE,
                                     packed->data(), counts->data(), displs->data(), MPI_BYTE, comm,
                                     request),
                     "MPI_Iallgatherv");
          },
          [members, packed, layout, counts, displs, done](const MPI_Status&) {
            layout->Move<false>(packed->data(), members->front().one().output.raw());
            done();
          }};
}

MpiTransport::Op MpiTransport::ReduceScatterOp(const plan::Task& task, const CollectiveComm& c,
                                               const Members& members, ReduceOp op,
                                               Done done) const {
  // The input packed by rank, then each rank receives its chunk reduced.
  const int axis = task.collective().scatter_axis();
  std::vector<int64_t> extents;
  auto counts = std::make_shared<std::vector<int>>();
  for (const std::vector<int>& m : c.by_comm_rank) {
    const Shape chunk = runtime::ToShape(OutputDesc(plan_, *c.members[m.front()]), task.name());
    extents.push_back(chunk[axis]);
    counts->push_back(static_cast<int>(chunk.numel()));
  }
  runtime::CollectiveTensors& m = members->front().one();
  const AxisChunks layout(m.input.shape(), axis, extents, DTypeSize(m.input.dtype()));
  auto packed = std::make_shared<std::vector<std::byte>>(m.input.nbytes());
  layout.Move<true>(m.input.raw(), packed->data());
  const MPI_Comm comm = c.comm;
  return {[members, packed, counts, op, comm](MPI_Request* request) {
            runtime::CollectiveTensors& m = members->front().one();
            CheckMpi(MPI_Ireduce_scatter(packed->data(), m.output.raw(), counts->data(),
                                         MpiType(m.input.dtype()), MpiOp(op), comm, request),
                     "MPI_Ireduce_scatter");
          },
          [members, packed, counts, done](const MPI_Status&) { done(); }};
}

namespace {

// Byte counts and offsets of the chunks AxisChunks packs, in its chunk order.
struct PackedChunks {
  std::vector<int> bytes;
  std::vector<int> offsets;
};

PackedChunks ChunksOf(const Tensor& t, int axis, const std::vector<int64_t>& extents) {
  PackedChunks chunks;
  const int64_t per_index = t.shape()[axis] == 0 ? 0 : t.nbytes() / t.shape()[axis];
  int offset = 0;
  for (int64_t k : extents) {
    chunks.offsets.push_back(offset);
    chunks.bytes.push_back(static_cast<int>(per_index * k));
    offset += chunks.bytes.back();
  }
  return chunks;
}

}  // namespace

MpiTransport::Op MpiTransport::AllToAllOp(const plan::Task& task, const CollectiveComm& c,
                                          const Members& members, Done done) const {
  // Member j receives chunk j (along the scatter axis) of every member's input and joins them
  // along the gather axis in member order, as sbp::AllToAll does. Chunks are packed in member
  // order; the counts and displacements, by comm rank, point at each rank's member's chunk.
  const int scatter = task.collective().scatter_axis();
  const int gather = task.collective().gather_axis();
  std::vector<int64_t> scatter_extents;
  std::vector<int64_t> gather_extents;
  for (const plan::Task* member : c.members) {
    scatter_extents.push_back(runtime::ToShape(OutputDesc(plan_, *member), task.name())[scatter]);
    gather_extents.push_back(runtime::ToShape(InputDesc(plan_, *member), task.name())[gather]);
  }
  runtime::CollectiveTensors& m = members->front().one();
  const int64_t element = DTypeSize(m.input.dtype());
  const PackedChunks sent = ChunksOf(m.input, scatter, scatter_extents);
  const PackedChunks received = ChunksOf(m.output, gather, gather_extents);
  // MPI_Alltoallv's arguments, by comm rank: the chunk of each rank's member.
  auto by_rank = std::make_shared<std::pair<PackedChunks, PackedChunks>>();  // sent, received
  for (const std::vector<int>& rank_members : c.by_comm_rank) {
    const int j = rank_members.front();
    for (auto [from, to] : {std::pair{&sent, &by_rank->first}, {&received, &by_rank->second}}) {
      to->bytes.push_back(from->bytes[j]);
      to->offsets.push_back(from->offsets[j]);
    }
  }
  auto send = std::make_shared<std::vector<std::byte>>(m.input.nbytes());
  AxisChunks(m.input.shape(), scatter, scatter_extents, element)
      .Move<true>(m.input.raw(), send->data());
  auto recv = std::make_shared<std::vector<std::byte>>(m.output.nbytes());
  auto join = std::make_shared<AxisChunks>(m.output.shape(), gather, gather_extents, element);
  const MPI_Comm comm = c.comm;
  return {[send, recv, by_rank, comm](MPI_Request* request) {
            PackedChunks& out = by_rank->first;
            PackedChunks& in = by_rank->second;
            CheckMpi(MPI_Ialltoallv(send->data(), out.bytes.data(), out.offsets.data(), MPI_BYTE,
                                    recv->data(), in.bytes.data(), in.offsets.data(), MPI_BYTE,
                                    comm, request),
                     "MPI_Ialltoallv");
          },
          [members, send, recv, by_rank, join, done](const MPI_Status&) {
            join->Move<false>(recv->data(), members->front().one().output.raw());
            done();
          }};
}

MpiTransport::Op MpiTransport::GatherAndComputeOp(const plan::Task& task, const CollectiveComm& c,
                                                  const Members& members, ReduceOp op,
                                                  Done done) const {
  // Everyone gets every member's input; each rank then computes its own members' outputs.
  auto send = std::make_shared<std::vector<std::byte>>();
  for (const runtime::CollectiveMember& m : *members) {
    const Tensor& input = m.one().input;
    send->insert(send->end(), input.raw(), input.raw() + input.nbytes());
  }
  auto counts = std::make_shared<std::vector<int>>();
  auto displs = std::make_shared<std::vector<int>>();
  int total = 0;
  for (const std::vector<int>& ranks_members : c.by_comm_rank) {
    int bytes = 0;
    for (int m : ranks_members) {
      bytes += static_cast<int>(BytesOf(InputDesc(plan_, *c.members[m]), task.name()));
    }
    displs->push_back(total);
    counts->push_back(bytes);
    total += bytes;
  }
  auto gathered = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(total));
  const plan::Plan& plan = plan_;
  const CollectiveComm* info = &c;
  const plan::CollectiveDesc desc = task.collective();
  const MPI_Comm comm = c.comm;
  return {[send, gathered, counts, displs, comm](MPI_Request* request) {
            CheckMpi(MPI_Iallgatherv(send->data(), static_cast<int>(send->size()), MPI_BYTE,
                                     gathered->data(), counts->data(), displs->data(), MPI_BYTE,
                                     comm, request),
                     "MPI_Iallgatherv");
          },
          [members, gathered, counts, displs, info, desc, op, done, &plan](const MPI_Status&) {
            std::vector<runtime::CollectiveMember> all(info->members.size());
            size_t at = 0;
            for (const std::vector<int>& ranks_members : info->by_comm_rank) {
              for (int m : ranks_members) {
                const plan::Task& t = *info->members[m];
                Tensor input = Empty(InputDesc(plan, t), t.name());
                std::copy_n(gathered->data() + at, input.nbytes(), input.raw());
                at += input.nbytes();
                all[m].task = t.id();
                all[m].member = m;
                all[m].tensors.push_back({std::move(input), Empty(OutputDesc(plan, t), t.name())});
              }
            }
            std::vector<Tensor*> local_outputs(all.size(), nullptr);
            for (runtime::CollectiveMember& m : *members) local_outputs[m.member] = &m.one().output;
            runtime::HostDevice host(0);  // the gathered buffers are host tensors
            runtime::ComputeCollective(host, desc, op, all);
            for (size_t m = 0; m < all.size(); ++m) {
              if (local_outputs[m] == nullptr) continue;
              std::copy_n(all[m].one().output.raw(), all[m].one().output.nbytes(),
                          local_outputs[m]->raw());
            }
            done();
          }};
}

std::vector<std::string> MpiTransport::Pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> lines;
  for (const auto& [id, what] : in_flight_) lines.push_back(what);
  return lines;
}

std::vector<std::vector<std::byte>> MpiTransport::Allgather(const std::vector<std::byte>& bytes) {
  return AllgatherBytes(bytes);
}

runtime::SinkValues MpiTransport::ExchangeSinks(const plan::Plan& plan,
                                                const runtime::SinkValues& local) {
  return ExchangeSinkValues(plan, local);
}

}  // namespace twinflow::comm
