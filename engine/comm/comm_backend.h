#pragma once
// How the ranks of a multi-process run reach each other, chosen the same way on every rank
// before it starts, from what each rank says of its GPUs:
//   - cpu devices: the MPI transport (mpi_transport.h);
//   - cuda devices, each on a GPU no other device of the job uses, in a build with NCCL: NCCL
//     (nccl/nccl_transport.h), one GPU per rank;
//   - otherwise (ranks sharing a GPU, several devices in a rank, no NCCL in this build): host
//     staging over the MPI transport (engine/runtime/host_staging.h).
// The choice and its reason are printed at start.
#include <string>
#include <vector>

namespace twinflow::comm {

enum class CommBackend { kMpi, kHostStaging, kNccl };

const char* CommBackendName(CommBackend backend);  // "MPI", "host staging over MPI", "NCCL"

// What one rank says of itself: its host, and the GPU (a PCI bus id) of each of its cuda
// devices in device order.
struct RankGpus {
  std::string host;
  std::vector<std::string> gpus;
};

// One line, and back (CommError naming the text when it is not such a line).
std::string EncodeRankGpus(const RankGpus& rank);
RankGpus DecodeRankGpus(const std::string& text);

struct BackendChoice {
  CommBackend backend = CommBackend::kMpi;
  std::string reason;  // e.g. "ranks 0 and 1 share GPU 0000:1b:00.0 of host a"
};

// `ranks` by rank; `cuda`: the Plan's devices are cuda; `have_nccl`: this build has NCCL.
BackendChoice ChooseBackend(const std::vector<RankGpus>& ranks, bool cuda, bool have_nccl);

}  // namespace twinflow::comm
