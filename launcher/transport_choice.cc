#include "launcher/transport_choice.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "engine/comm/comm_backend.h"
#include "engine/comm/mpi_transport.h"
#include "engine/runtime/device_place.h"
#ifdef TWINFLOW_HAVE_CUDA
#include "kernels/cuda/cuda_env.h"
#endif
#ifdef TWINFLOW_HAVE_NCCL
#include "engine/comm/nccl/nccl_transport.h"
#endif

namespace twinflow::launcher {
namespace {

constexpr bool kHaveNccl =
#ifdef TWINFLOW_HAVE_NCCL
    true;
#else
    false;
#endif

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// The GPUs this rank's cuda devices will use (the places the executor gives them), by bus id;
// none where the build has no CUDA or the node no GPU (the executor then refuses the devices).
std::vector<std::string> LocalGpus(const plan::Plan& plan, int rank, int local_rank, int* first) {
  std::vector<std::string> gpus;
#ifdef TWINFLOW_HAVE_CUDA
  std::string reason;
  const int count = kernels::CudaDeviceCount(&reason);
  const std::vector<runtime::DevicePlace> places = runtime::DevicePlaces(plan, rank, local_rank);
  for (int d = 0; d < plan.devices_size() && count > 0; ++d) {
    if (plan.devices(d).rank() != rank) continue;
    const int gpu = runtime::GpuFor(places[d], count);
    if (gpus.empty()) *first = gpu;
    gpus.push_back(kernels::GpuBusId(gpu));
  }
#else
  (void)plan, (void)rank, (void)local_rank, (void)first;
#endif
  return gpus;
}

}  // namespace

std::unique_ptr<runtime::Transport> MakeTransport(const plan::Plan& plan,
                                                  const comm::MpiSession& mpi, std::ostream& log) {
  bool cuda = false;
  for (const plan::Device& d : plan.devices()) cuda |= d.type() == plan::DEVICE_CUDA;
  comm::RankGpus mine{HostName(), {}};
  int gpu = 0;
  if (cuda) mine.gpus = LocalGpus(plan, mpi.rank(), mpi.local_rank(), &gpu);
  std::vector<comm::RankGpus> ranks;
  for (const std::string& line : comm::AllgatherText(comm::EncodeRankGpus(mine))) {
    ranks.push_back(comm::DecodeRankGpus(line));
  }
  const comm::BackendChoice choice = comm::ChooseBackend(ranks, cuda, kHaveNccl);
  if (cuda && mpi.rank() == 0) {
    log << "across ranks: " << comm::CommBackendName(choice.backend) << " (" << choice.reason
        << ")\n";
  }
#ifdef TWINFLOW_HAVE_NCCL
  if (choice.backend == comm::CommBackend::kNccl) {
    return std::make_unique<comm::NcclTransport>(plan, mpi, gpu);
  }
#else
  (void)gpu;
#endif
  return std::make_unique<comm::MpiTransport>(plan, mpi);
}

}  // namespace twinflow::launcher
