#include "launcher/mpi_tune_group.h"

#include "engine/comm/mpi_session.h"

namespace twinflow::launcher {
namespace {

class Mpi : public planner::TuneGroup {
 public:
  Mpi(int rank, int ranks) : TuneGroup(rank, ranks) {}
  const char* noun() const override { return "ranks"; }
  const char* member_noun() const override { return "rank"; }
  std::vector<std::string> Allgather(const std::string& mine) override {
    return comm::AllgatherText(mine);
  }
};

}  // namespace

std::unique_ptr<planner::TuneGroup> MpiTune(int rank, int ranks) {
  return std::make_unique<Mpi>(rank, ranks);
}

}  // namespace twinflow::launcher
