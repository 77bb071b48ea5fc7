#include "engine/comm/comm_backend.h"

#include <map>
#include <sstream>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::comm {
namespace {

// The first GPU two devices share: (rank, slot) of each, and the GPU; nothing when none does.
struct Sharing {
  int rank[2] = {0, 0};
  size_t slot[2] = {0, 0};
  std::string gpu;
  std::string host;
};

bool FindSharing(const std::vector<RankGpus>& ranks, Sharing& found) {
  std::map<std::pair<std::string, std::string>, std::pair<int, size_t>> first;  // (host, gpu)
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (size_t s = 0; s < ranks[r].gpus.size(); ++s) {
      const auto key = std::make_pair(ranks[r].host, ranks[r].gpus[s]);
      const auto [it, fresh] = first.emplace(key, std::make_pair(static_cast<int>(r), s));
      if (fresh) continue;
      found = {
          {it->second.first, static_cast<int>(r)}, {it->second.second, s}, key.second, key.first};
      return true;
    }
  }
  return false;
}

std::string Describe(const Sharing& s) {
  const std::string where = " share GPU " + s.gpu + " of host " + s.host;
  if (s.rank[0] != s.rank[1]) {
    return "ranks " + std::to_string(s.rank[0]) + " and " + std::to_string(s.rank[1]) + where;
  }
  return "devices " + std::to_string(s.slot[0]) + " and " + std::to_string(s.slot[1]) +
         " of rank " + std::to_string(s.rank[0]) + where;
}

}  // namespace

const char* CommBackendName(CommBackend backend) {
  switch (backend) {
    case CommBackend::kMpi:
      return "MPI";
    case CommBackend::kHostStaging:
      return "host staging over MPI";
    case CommBackend::kNccl:
      return "NCCL";
  }
  return "?";
}

std::string EncodeRankGpus(const RankGpus& rank) {
  std::string line = rank.host;
  for (const std::string& gpu : rank.gpus) line += " " + gpu;
  return line;
}

RankGpus DecodeRankGpus(const std::string& text) {
  std::istringstream in(text);
  RankGpus rank;
  if (!(in >> rank.host)) throw CommError("a rank's GPU line names no host: '" + text + "'");
  for (std::string gpu; in >> gpu;) rank.gpus.push_back(gpu);
  return rank;
}

BackendChoice ChooseBackend(const std::vector<RankGpus>& ranks, bool cuda, bool have_nccl) {
  if (!cuda) return {CommBackend::kMpi, "cpu devices"};
  if (!have_nccl) return {CommBackend::kHostStaging, "this build of twinflow has no NCCL"};
  Sharing sharing;
  if (FindSharing(ranks, sharing)) {
    return {CommBackend::kHostStaging, Describe(sharing) + ": NCCL needs a GPU of its own"};
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].gpus.empty()) {
      return {CommBackend::kHostStaging, "rank " + std::to_string(r) + " sees no GPU"};
    }
    if (ranks[r].gpus.size() != 1) {
      return {CommBackend::kHostStaging, "rank " + std::to_string(r) + " has " +
                                             std::to_string(ranks[r].gpus.size()) +
                                             " devices: the NCCL path takes one GPU per rank"};
    }
  }
  return {CommBackend::kNccl, "one GPU per rank"};
}

}  // namespace twinflow::comm
