#include "engine/comm/launch_environment.h"

#include <cstdlib>

#include "engine/core/error.h"

namespace twinflow::comm {
namespace {

std::optional<int> IntVariable(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> text = env(name);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || value < 0 || value > (1 << 30)) {
    throw InvalidArgumentError(name + "='" + *text +
                               "' in the environment is not a rank: twinflow's ranks come from "
                               "mpirun; unset it, or launch with mpirun");
  }
  return static_cast<int>(value);
}

}  // namespace

std::optional<std::string> ProcessEnvironment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

void CheckLaunchEnvironment(const MpiPlace& mpi, const EnvLookup& env) {
  const std::optional<int> world = IntVariable(env, "WORLD_SIZE");
  const std::optional<int> rank = IntVariable(env, "RANK");
  const std::optional<int> local = IntVariable(env, "LOCAL_RANK");
  const std::string place = mpi.size == 1 ? "this process is not under mpirun (MPI: 1 rank)"
                                          : "MPI has rank " + std::to_string(mpi.rank) + " of " +
                                                std::to_string(mpi.size);
  const std::string advice =
      "; twinflow takes its ranks from MPI, not from torchrun's variables: launch with mpirun "
      "-np N (one process per rank), or unset them";
  if (world && *world != mpi.size) {
    throw InvalidArgumentError("WORLD_SIZE=" + std::to_string(*world) + " but " + place + advice);
  }
  if (rank && *rank != mpi.rank) {
    throw InvalidArgumentError("RANK=" + std::to_string(*rank) + " but " + place + advice);
  }
  if (local && *local != mpi.local_rank) {
    throw InvalidArgumentError("LOCAL_RANK=" + std::to_string(*local) + " but " + place +
                               " (local rank " + std::to_string(mpi.local_rank) + ")" + advice);
  }
}

void CheckLaunchEnvironment(const MpiSession* session) {
  if (session == nullptr) return CheckLaunchEnvironment(MpiPlace{});
  CheckLaunchEnvironment(MpiPlace{session->rank(), session->size(), session->local_rank()});
}

}  // namespace twinflow::comm
