#include "launcher/startup_agreement.h"

#include "engine/comm/mpi_session.h"
#include "engine/core/error.h"

namespace twinflow::launcher {

std::vector<std::string> AgreeOnStartup(const std::string& command, const std::string& text,
                                        int rank, double seconds) {
  std::vector<std::string> texts = comm::GatherAtStartup(command + " " + text, seconds);
  for (size_t r = 0; r < texts.size(); ++r) {
    const std::string theirs = texts[r].substr(0, texts[r].find(' '));
    if (theirs != command) {
      throw InvalidArgumentError("rank " + std::to_string(r) + " runs `twinflow " + theirs +
                                 "` and rank " + std::to_string(rank) + " `twinflow " + command +
                                 "`: every rank of the job must run the same command");
    }
    texts[r].erase(0, command.size() + 1);
  }
  return texts;
}

}  // namespace twinflow::launcher
