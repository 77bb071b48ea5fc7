#include "engine/comm/nccl/nccl_launch.h"

#include <memory>
#include <string>
#include <utility>

#include "engine/comm/nccl/nccl_check.h"
#include "engine/comm/task_descs.h"
#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/plan_tensors.h"
#include "kernels/cuda/box_copy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/shape_launch.h"

namespace twinflow::comm {
namespace {

// A tensor of shape `whole` cut along `axis` into one chunk per member (`extents`), each
// chunk laid out on its own, one after another, when packed.
struct AxisCut {
  Shape whole;
  int axis = 0;
  std::vector<int64_t> extents;
  DType dtype = DType::kF32;

  Region Chunk(size_t m) const {
    Region r = Region::Full(whole);
    int64_t begin = 0;
    for (size_t k = 0; k < m; ++k) begin += extents[k];
    r.ranges[axis] = {begin, begin + extents[m]};
    return r;
  }
  int64_t Bytes(size_t m) const { return Chunk(m).numel() * DTypeSize(dtype); }
  int64_t Offset(size_t m) const {
    int64_t at = 0;
    for (size_t k = 0; k < m; ++k) at += Bytes(k);
    return at;
  }
  bool Even() const {
    for (int64_t e : extents) {
      if (e != extents.front()) return false;
    }
    return true;
  }
  // The chunks lie one after another in the tensor itself: no axis before `axis` exceeds 1.
  bool InPlace() const {
    for (int d = 0; d < axis; ++d) {
      if (whole[d] != 1) return false;
    }
    return true;
  }
  // Moves every chunk between the tensor at `tensor` and its packed place at `packed`.
  void Move(const std::byte* from, std::byte* to, bool pack, cudaStream_t stream) const {
    for (size_t m = 0; m < extents.size(); ++m) {
      const Region chunk = Chunk(m);
      const Shape shape = chunk.shape();
      if (shape.numel() == 0) continue;
      const Region all = Region::Full(shape);
      const auto box = pack ? kernels::cuda::MakeBox(whole, chunk, shape, all, dtype)
                            : kernels::cuda::MakeBox(shape, all, whole, chunk, dtype);
      const std::byte* src = pack ? from : from + Offset(m);
      std::byte* dst = pack ? to + Offset(m) : to;
      kernels::cuda::LaunchBoxCopy(src, dst, box, DTypeSize(dtype), stream);
    }
  }
};

AxisCut CutOf(const plan::Plan& plan, const std::vector<const plan::Task*>& members,
              const Tensor& whole, int axis, bool by_input) {
  AxisCut cut{whole.shape(), axis, {}, whole.dtype()};
  for (const plan::Task* m : members) {
    const plan::TensorDesc& desc = by_input ? InputDesc(plan, *m) : OutputDesc(plan, *m);
    cut.extents.push_back(runtime::ToShape(desc, m->name())[axis]);
  }
  return cut;
}

// An open NCCL group on this thread. A failing call must not leave the group open: later
// calls would be deferred into it.
struct NcclGroup {
  int rank;
  bool open = false;
  explicit NcclGroup(int r) : rank(r) {
    CheckNccl(ncclGroupStart(), "ncclGroupStart", rank);
    open = true;
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void End() {
    open = false;
    CheckNccl(ncclGroupEnd(), "ncclGroupEnd", rank);
  }
  ~NcclGroup() {
    if (open) ncclGroupEnd();
  }
};

// Every member's chunk (`bytes` by member, packed at `offsets` in `received`) reaches every
// other: `mine` goes to each peer, and this rank's own chunk is copied in place.
void ExchangeChunks(ChannelStream& ch, const std::vector<const std::byte*>& sent,
                    const std::vector<int64_t>& sent_bytes, std::byte* received,
                    const std::vector<int64_t>& received_bytes,
                    const std::vector<int64_t>& received_offsets) {
  NcclGroup group(ch.rank);
  for (int peer = 0; peer < ch.size; ++peer) {
    if (peer == ch.comm_rank) continue;
    if (sent_bytes[peer] > 0) {
      CheckNccl(ncclSend(sent[peer], sent_bytes[peer], ncclInt8, peer, ch.comm, ch.stream),
                "ncclSend", ch.rank);
    }
    if (received_bytes[peer] > 0) {
      CheckNccl(ncclRecv(received + received_offsets[peer], received_bytes[peer], ncclInt8, peer,
                         ch.comm, ch.stream),
                "ncclRecv", ch.rank);
    }
  }
  group.End();
  const int self = ch.comm_rank;
  if (received_bytes[self] > 0) {
    TF_CUDA_CHECK(cudaMemcpyAsync(received + received_offsets[self], sent[self],
                                  received_bytes[self], cudaMemcpyDeviceToDevice, ch.stream));
  }
}

void AllGather(ChannelStream& ch, const AxisCut& cut, const Tensor& in, Tensor& out) {
  if (cut.Even() && cut.InPlace()) {
    CheckNccl(
        ncclAllGather(in.raw(), out.raw(), in.numel(), NcclType(in.dtype()), ch.comm, ch.stream),
        "ncclAllGather", ch.rank);
    return;
  }
  const int n = ch.size;
  std::vector<const std::byte*> sent(n, in.raw());
  std::vector<int64_t> sent_bytes(n, in.nbytes());
  std::vector<int64_t> bytes(n);
  std::vector<int64_t> offsets(n);
  for (int m = 0; m < n; ++m) {
    bytes[m] = cut.Bytes(m);
    offsets[m] = cut.Offset(m);
  }
  std::byte* packed = ch.recv.Reserve(out.nbytes(), ch.stream);
  ExchangeChunks(ch, sent, sent_bytes, packed, bytes, offsets);
  cut.Move(packed, out.raw(), false, ch.stream);
}

void ReduceScatter(ChannelStream& ch, const AxisCut& cut, const Tensor& in, Tensor& out,
                   ReduceOp op) {
  const std::byte* packed = in.raw();
  if (!cut.InPlace()) {
    std::byte* scratch = ch.send.Reserve(in.nbytes(), ch.stream);
    cut.Move(in.raw(), scratch, true, ch.stream);
    packed = scratch;
  }
  if (cut.Even()) {
    CheckNccl(ncclReduceScatter(packed, out.raw(), out.numel(), NcclType(in.dtype()), NcclOp(op),
                                ch.comm, ch.stream),
              "ncclReduceScatter", ch.rank);
    return;
  }
  std::byte* reduced = ch.recv.Reserve(in.nbytes(), ch.stream);
  CheckNccl(ncclAllReduce(packed, reduced, in.numel(), NcclType(in.dtype()), NcclOp(op), ch.comm,
                          ch.stream),
            "ncclAllReduce", ch.rank);
  TF_CUDA_CHECK(cudaMemcpyAsync(out.raw(), reduced + cut.Offset(ch.comm_rank), out.nbytes(),
                                cudaMemcpyDeviceToDevice, ch.stream));
}

void AllToAll(ChannelStream& ch, const AxisCut& scatter, const AxisCut& gather, const Tensor& in,
              Tensor& out) {
  const int n = ch.size;
  std::byte* sending = ch.send.Reserve(in.nbytes(), ch.stream);
  scatter.Move(in.raw(), sending, true, ch.stream);
  std::byte* receiving = ch.recv.Reserve(out.nbytes(), ch.stream);
  std::vector<const std::byte*> sent(n);
  std::vector<int64_t> sent_bytes(n), bytes(n), offsets(n);
  for (int m = 0; m < n; ++m) {
    sent[m] = sending + scatter.Offset(m);
    sent_bytes[m] = scatter.Bytes(m);
    bytes[m] = gather.Bytes(m);
    offsets[m] = gather.Offset(m);
  }
  ExchangeChunks(ch, sent, sent_bytes, receiving, bytes, offsets);
  gather.Move(receiving, out.raw(), false, ch.stream);
}

}  // namespace

DeviceScratch::~DeviceScratch() {
  if (data_ != nullptr) cudaFree(data_);
}

std::byte* DeviceScratch::Reserve(int64_t bytes, cudaStream_t stream) {
  if (bytes > bytes_) {
    // Stream-ordered: the old buffer goes once the operations before it are done, and the
    // thread never waits for them (they may wait for peers that wait for this thread).
    if (data_ != nullptr) TF_CUDA_CHECK(cudaFreeAsync(data_, stream));
    data_ = nullptr;
    TF_CUDA_CHECK(cudaMallocAsync(&data_, static_cast<size_t>(bytes), stream));
    bytes_ = bytes;
  }
  return static_cast<std::byte*>(data_);
}

namespace {

// A bucket's all-reduces in one NCCL group, which NCCL runs as one launch.
NcclWork BucketWork(ReduceOp op, std::vector<runtime::CollectiveTensors> tensors) {
  auto held = std::make_shared<std::vector<runtime::CollectiveTensors>>(std::move(tensors));
  return [held, op](ChannelStream& ch) {
    NcclGroup group(ch.rank);
    for (runtime::CollectiveTensors& t : *held) {
      CheckNccl(ncclAllReduce(t.input.raw(), t.output.raw(), t.input.numel(),
                              NcclType(t.input.dtype()), NcclOp(op), ch.comm, ch.stream),
                "ncclAllReduce", ch.rank);
    }
    group.End();
  };
}

}  // namespace

NcclWork CollectiveWork(const plan::Plan& plan, const std::vector<const plan::Task*>& members,
                        const plan::Task& task, ReduceOp op,
                        std::vector<runtime::CollectiveTensors> tensors) {
  const plan::CollectiveDesc& desc = task.collective();
  const CollectiveKind kind = plan::FromProto(desc.kind(), task.name());
  const int root = desc.root();
  if (tensors.size() > 1 && kind == CollectiveKind::kAllReduce)
    return BucketWork(op, std::move(tensors));
  if (tensors.size() != 1) {
    throw PlanError("task '" + task.name() + "' brings " + std::to_string(tensors.size()) +
                    " tensors to a collective of one");
  }
  auto in = std::make_shared<Tensor>(std::move(tensors[0].input));
  auto out = std::make_shared<Tensor>(std::move(tensors[0].output));
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return [in, out, op](ChannelStream& ch) {
        CheckNccl(ncclAllReduce(in->raw(), out->raw(), in->numel(), NcclType(in->dtype()),
                                NcclOp(op), ch.comm, ch.stream),
                  "ncclAllReduce", ch.rank);
      };
    case CollectiveKind::kBroadcast:
      return [in, out, root](ChannelStream& ch) {
        CheckNccl(ncclBroadcast(in->raw(), out->raw(), out->numel(), NcclType(out->dtype()), root,
                                ch.comm, ch.stream),
                  "ncclBroadcast", ch.rank);
      };
    case CollectiveKind::kAllGather: {
      const AxisCut cut = CutOf(plan, members, *out, desc.gather_axis(), true);
      return [in, out, cut](ChannelStream& ch) { AllGather(ch, cut, *in, *out); };
    }
    case CollectiveKind::kReduceScatter: {
      const AxisCut cut = CutOf(plan, members, *in, desc.scatter_axis(), false);
      return [in, out, cut, op](ChannelStream& ch) { ReduceScatter(ch, cut, *in, *out, op); };
    }
    case CollectiveKind::kAllToAll: {
      const AxisCut scatter = CutOf(plan, members, *in, desc.scatter_axis(), false);
      const AxisCut gather = CutOf(plan, members, *out, desc.gather_axis(), true);
      return [in, out, scatter, gather](ChannelStream& ch) {
        AllToAll(ch, scatter, gather, *in, *out);
      };
    }
  }
  throw PlanError("task '" + task.name() + "' is a collective of unknown kind");
}

NcclWork SendWork(int peer, Tensor slot, const runtime::SendBox& box) {
  auto source = std::make_shared<Tensor>(std::move(slot));
  const auto copy = kernels::cuda::MakeBox(source->shape(), box.from, box.shape, box.to, box.dtype);
  const int64_t bytes = box.shape.numel() * DTypeSize(box.dtype);
  const bool whole = box.to == Region::Full(box.shape);
  const int64_t element = DTypeSize(box.dtype);
  return [source, copy, bytes, whole, element, peer](ChannelStream& ch) {
    std::byte* packed = ch.send.Reserve(bytes, ch.stream);
    if (!whole) TF_CUDA_CHECK(cudaMemsetAsync(packed, 0, bytes, ch.stream));
    kernels::cuda::LaunchBoxCopy(source->raw(), packed, copy, element, ch.stream);
    CheckNccl(ncclSend(packed, bytes, ncclInt8, peer, ch.comm, ch.stream), "ncclSend", ch.rank);
  };
}

NcclWork RecvWork(int peer, Tensor slot) {
  auto target = std::make_shared<Tensor>(std::move(slot));
  return [target, peer](ChannelStream& ch) {
    CheckNccl(ncclRecv(target->raw(), target->nbytes(), ncclInt8, peer, ch.comm, ch.stream),
              "ncclRecv", ch.rank);
  };
}

}  // namespace twinflow::comm
