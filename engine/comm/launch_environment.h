#pragma once
// Rank discovery comes from MPI only. torchrun (and other launchers in PyTorch's style) describe
// a job in RANK, WORLD_SIZE and LOCAL_RANK; twinflow does not bootstrap from them (its
// transport is MPI), but it must not ignore them either: a job started by torchrun would run
// every process as a one-rank job, each training on its own, without a word. So when they are
// set they must agree with MPI's ranks.
#include <functional>
#include <optional>
#include <string>

#include "engine/comm/mpi_session.h"

namespace twinflow::comm {

// What MPI says about this process (rank 0 of 1 outside mpirun).
struct MpiPlace {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
};

// A variable of the environment by name; std::nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> ProcessEnvironment(const std::string& name);

// InvalidArgumentError naming the variable when RANK, WORLD_SIZE or LOCAL_RANK is set, is not a
// non-negative integer, or disagrees with `mpi`, saying to launch with mpirun.
void CheckLaunchEnvironment(const MpiPlace& mpi, const EnvLookup& env = ProcessEnvironment);
// The same for this process: `session` is null outside mpirun.
void CheckLaunchEnvironment(const MpiSession* session);

}  // namespace twinflow::comm
