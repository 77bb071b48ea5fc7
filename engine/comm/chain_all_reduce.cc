#include "engine/comm/chain_all_reduce.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/comm/mpi_session.h"
#include "engine/core/error.h"
#include "engine/runtime/host_device.h"

namespace twinflow::comm {
namespace {

// Chunk k's messages carry tag k modulo this (MPI guarantees tags up to 32767): with at most
// kWindow chunks in flight no two messages between the same ranks share a tag.
constexpr int64_t kTags = 32768;

template <typename T>
void Add(const std::byte* a, const std::byte* b, std::byte* out, int64_t n) {
  const auto* x = reinterpret_cast<const T*>(a);
  const auto* y = reinterpret_cast<const T*>(b);
  auto* z = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// out = a + b, element by element (out may be b's bytes).
void AddChunk(DType dtype, const std::byte* a, const std::byte* b, std::byte* out, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      return Add<float>(a, b, out, n);
    case DType::kF64:
      return Add<double>(a, b, out, n);
    case DType::kI32:
      return Add<int32_t>(a, b, out, n);
    case DType::kI64:
      return Add<int64_t>(a, b, out, n);
    default:
      throw CommError(std::string("all-reduce of ") + DTypeName(dtype) + " over MPI");
  }
}

}  // namespace

namespace {

std::vector<runtime::CollectiveTensors> One(const Tensor& input, Tensor& output) {
  std::vector<runtime::CollectiveTensors> one;
  one.push_back({input.AsView(), output.AsView()});
  return one;
}

}  // namespace

ChainAllReduce::ChainAllReduce(const Tensor& input, Tensor& output, ReduceOp op, MPI_Comm comm,
                               std::vector<std::byte>& scratch)
    : ChainAllReduce(One(input, output), op, comm, scratch) {}

ChainAllReduce::ChainAllReduce(const std::vector<runtime::CollectiveTensors>& tensors, ReduceOp op,
                               MPI_Comm comm, std::vector<std::byte>& scratch)
    : dtype_(tensors.empty() ? DType::kF32 : tensors[0].input.dtype()),
      op_(op),
      comm_(comm),
      scratch_(scratch) {
  CheckMpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  CheckMpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  two_way_ = size_ == 2 && op == ReduceOp::kSum;
  for (const runtime::CollectiveTensors& t : tensors) {
    if (t.input.dtype() != dtype_ || t.input.nbytes() != t.output.nbytes()) {
      throw CommError("an all-reduce bucket of tensors that differ in dtype or size");
    }
    for (int64_t at = 0; at < t.input.nbytes(); at += chunk_bytes_) {
      Chunk c;
      c.input = t.input.raw() + at;
      c.output = const_cast<std::byte*>(t.output.raw()) + at;
      c.bytes = static_cast<int>(std::min(chunk_bytes_, t.input.nbytes() - at));
      chunks_.push_back(c);
    }
  }
  if (scratch_.size() < static_cast<size_t>(kWindow * chunk_bytes_)) {
    scratch_.resize(static_cast<size_t>(kWindow * chunk_bytes_));
  }
  for (int s = kWindow - 1; s >= 0; --s) free_slots_.push_back(s);
}

ChainAllReduce::~ChainAllReduce() {
  // A failed run abandons its operations; MPI must not write into freed buffers afterwards.
  for (Chunk& c : chunks_) {
    if (c.request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&c.request);
    MPI_Request_free(&c.request);
  }
}

void ChainAllReduce::Start() {
  if (size_ != 1) return;
  for (const Chunk& c : chunks_) {
    if (c.output != c.input) std::memcpy(c.output, c.input, static_cast<size_t>(c.bytes));
  }
  done_ = static_cast<int64_t>(chunks_.size());
}

bool ChainAllReduce::Test(Chunk& c) {
  if (c.request == MPI_REQUEST_NULL) return true;
  int flag = 0;
  CheckMpi(MPI_Test(&c.request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  return flag != 0;
}

void ChainAllReduce::Begin(int64_t k) {
  Chunk& c = chunks_[k];
  const int tag = static_cast<int>(k % kTags);
  if (Place(k) == 0) {
    // The chain's start: its input goes on as the partial sum.
    CheckMpi(MPI_Isend(c.input, Bytes(k), MPI_BYTE, Toward(k, 1), tag, comm_, &c.request),
             "MPI_Isend");
    c.stage = Stage::kSending;
    return;
  }
  c.slot = free_slots_.back();
  free_slots_.pop_back();
  CheckMpi(MPI_Irecv(scratch_.data() + c.slot * chunk_bytes_, Bytes(k), MPI_BYTE, Toward(k, -1),
                     tag, comm_, &c.request),
           "MPI_Irecv");
  c.stage = Stage::kReceiving;
}

void ChainAllReduce::SumInto(int64_t k) {
  Chunk& c = chunks_[k];
  const int64_t elements = Bytes(k) / DTypeSize(dtype_);
  std::byte* partial = scratch_.data() + c.slot * chunk_bytes_;
  const std::byte* mine = c.input;
  // partial op input: the reference's order, (x0 + ... + x[r-1]) + x[r]. A sum is written
  // straight to the output (which may be the input's bytes); max and min go through the
  // reference's own kernel in the scratch, then to the output.
  if (op_ == ReduceOp::kSum) {
    AddChunk(dtype_, partial, mine, c.output, elements);
  } else {
    Tensor sum = Tensor::View(Shape{elements}, dtype_, partial);
    const Tensor x = Tensor::View(Shape{elements}, dtype_, const_cast<std::byte*>(mine));
    runtime::HostDevice(0).ReduceInto(x, sum, op_);
    std::memcpy(c.output, partial, static_cast<size_t>(Bytes(k)));
  }
  free_slots_.push_back(c.slot);
  c.slot = -1;
}

void ChainAllReduce::Advance(int64_t k) {
  Chunk& c = chunks_[k];
  const int tag = static_cast<int>(k % kTags);
  const bool last = Place(k) == size_ - 1;
  switch (c.stage) {
    case Stage::kReceiving:  // a partial sum arrived: add ours, pass it on (or back, if last)
      SumInto(k);
      CheckMpi(
          MPI_Isend(c.output, Bytes(k), MPI_BYTE, Toward(k, last ? -1 : 1), tag, comm_, &c.request),
          "MPI_Isend");
      c.stage = last ? Stage::kPassingBack : Stage::kSending;
      return;
    case Stage::kSending:  // the buffer is free again: the result comes back into it
      CheckMpi(MPI_Irecv(c.output, Bytes(k), MPI_BYTE, Toward(k, 1), tag, comm_, &c.request),
               "MPI_Irecv");
      c.stage = Stage::kAwaitingResult;
      return;
    case Stage::kAwaitingResult:
      if (Place(k) == 0) break;
      CheckMpi(MPI_Isend(c.output, Bytes(k), MPI_BYTE, Toward(k, -1), tag, comm_, &c.request),
               "MPI_Isend");
      c.stage = Stage::kPassingBack;
      return;
    case Stage::kPassingBack:
      break;
    case Stage::kWaiting:
    case Stage::kDone:
      return;
  }
  c.stage = Stage::kDone;
  ++done_;
}

bool ChainAllReduce::Progress() {
  const auto total = static_cast<int64_t>(chunks_.size());
  if (size_ == 1) return true;
  for (int64_t k = oldest_; k < next_; ++k) {
    Chunk& c = chunks_[k];
    while (c.stage != Stage::kDone && Test(c)) Advance(k);
  }
  // The window counts from the oldest unfinished chunk.
  while (oldest_ < next_ && chunks_[oldest_].stage == Stage::kDone) ++oldest_;
  while (next_ < total && next_ - oldest_ < kWindow && !free_slots_.empty()) Begin(next_++);
  return done_ == total;
}

}  // namespace twinflow::comm
