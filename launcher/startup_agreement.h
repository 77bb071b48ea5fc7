#pragma once
// The agreement every rank of an MPI job makes before it starts work: the same command, and
// what the command compares (run: the Plan hash and run flags; tune: its arguments), within a
// deadline that names a rank that never answers.
#include <string>
#include <vector>

namespace twinflow::launcher {

// Every rank's `text`, in rank order (comm::GatherAtStartup over "<command> <text>").
// InvalidArgumentError when a rank runs another twinflow command, naming it; TimeoutError
// naming the ranks that did not answer within `seconds`.
std::vector<std::string> AgreeOnStartup(const std::string& command, const std::string& text,
                                        int rank, double seconds);

}  // namespace twinflow::launcher
