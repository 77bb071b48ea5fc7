#pragma once
// ChainAllReduce: a large all-reduce between the ranks of one communicator (one member each),
// done with point-to-point messages in chunks instead of one MPI_Iallreduce.
//
// Why: Open MPI 4.1's non-blocking all-reduce is slow on large buffers on a host like ours
// (1.7 GB/s at 64 MiB against 3.4 GB/s for plain sends), and in place, as the memory plan asks
// for a gradient's all-reduce (CollectiveDesc.in_place), it falls to 0.2 GB/s.
//
// How: the ranks form a chain in comm-rank order, which is member order. Chunk by chunk, rank 0
// sends its input to rank 1, each next rank adds its own input to what it received and passes
// the sum on, and the last rank's sum is the result, which travels back down the chain. Every
// chunk is summed as ((x0 + x1) + x2) + ..., the order of the in-process reference
// (ComputeCollective), so results are bit-identical to an in-process run. Chunks pipeline: at
// most kWindow are in flight per rank, and each link carries the buffer once each way, as a
// ring does on two ranks. On two ranks a sum runs every other chunk down the chain the other
// way (x1 + x0 is x0 + x1, bit for bit), so that both ranks add and both links carry partial
// sums from the start.
//
// Threads: the comm thread alone calls Start and Progress.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/reduce_op.h"
#include "engine/core/tensor.h"
#include "engine/runtime/rendezvous.h"

namespace twinflow::comm {

class ChainAllReduce {
 public:
  static constexpr int64_t kChunkBytes = int64_t{1} << 20;
  static constexpr int kWindow = 8;

  // Lifetime: `input` and `output` (views of slots, possibly the same bytes) and `scratch`
  // (kWindow chunks, reused between calls) must outlive the operation, as must `comm`.
  ChainAllReduce(const Tensor& input, Tensor& output, ReduceOp op, MPI_Comm comm,
                 std::vector<std::byte>& scratch);
  // A gradient bucket (plan.proto's CollectiveDesc): every tensor's input reduced into its
  // output, the tensors one after another in the chunks' order, each cut on its own (no chunk
  // spans two), so no bytes are packed. All of one dtype; the same lifetimes as above.
  ChainAllReduce(const std::vector<runtime::CollectiveTensors>& tensors, ReduceOp op, MPI_Comm comm,
                 std::vector<std::byte>& scratch);
  ChainAllReduce(const ChainAllReduce&) = delete;
  ChainAllReduce& operator=(const ChainAllReduce&) = delete;
  ~ChainAllReduce();

  void Start();
  // Advances what can advance; true once this rank's part is complete.
  bool Progress();

 private:
  // A chunk's steps on this rank, in order.
  enum class Stage { kWaiting, kReceiving, kSending, kAwaitingResult, kPassingBack, kDone };
  struct Chunk {
    const std::byte* input = nullptr;
    std::byte* output = nullptr;
    int bytes = 0;
    Stage stage = Stage::kWaiting;
    MPI_Request request = MPI_REQUEST_NULL;
    int slot = -1;  // scratch slot of a received partial sum
  };

  bool Test(Chunk& c);
  void Advance(int64_t k);
  void Begin(int64_t k);
  void SumInto(int64_t k);  // output[k] = received partial sum op input[k]
  // This rank's place in chunk k's chain (0: its start), and its neighbours there.
  bool Reversed(int64_t k) const { return two_way_ && k % 2 == 1; }
  int Place(int64_t k) const { return Reversed(k) ? size_ - 1 - rank_ : rank_; }
  int Toward(int64_t k, int step) const { return Reversed(k) ? rank_ - step : rank_ + step; }
  int Bytes(int64_t k) const { return chunks_[k].bytes; }

  DType dtype_;
  ReduceOp op_;
  MPI_Comm comm_;
  std::vector<std::byte>& scratch_;
  int rank_ = 0;
  int size_ = 1;
  int64_t chunk_bytes_ = kChunkBytes;
  bool two_way_ = false;
  std::vector<Chunk> chunks_;
  std::vector<int> free_slots_;
  int64_t next_ = 0;    // the next chunk to begin
  int64_t oldest_ = 0;  // the oldest chunk not done
  int64_t done_ = 0;
};

}  // namespace twinflow::comm
