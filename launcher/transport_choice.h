#pragma once
// The transport of a multi-process `twinflow run`: every rank says which GPUs its devices use
// (engine/runtime/device_place.h), all ranks reach the same choice (engine/comm/
// comm_backend.h: MPI for cpu devices; NCCL for cuda devices one GPU per rank; host staging
// over MPI otherwise), and rank 0 prints the choice and its reason for cuda devices.
#include <memory>
#include <ostream>

#include "engine/comm/mpi_session.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/transport.h"

namespace twinflow::launcher {

// Collective over MPI_COMM_WORLD. `plan` must outlive the transport.
std::unique_ptr<runtime::Transport> MakeTransport(const plan::Plan& plan,
                                                  const comm::MpiSession& mpi, std::ostream& log);

}  // namespace twinflow::launcher
