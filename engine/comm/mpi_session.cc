#include "engine/comm/mpi_session.h"

#include <mpi.h>

#include <cstdlib>

#include "engine/core/error.h"

namespace twinflow::comm {

bool MpiSession::LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

MpiSession::MpiSession() {
  // Open MPI's non-blocking all-reduce picks its algorithm by message size, and for the
  // megabytes of gradients training moves its default is about half as fast as the ring
  // (bench/mpi_bench.sh measures both). A user's own setting wins (setenv does not overwrite).
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
  int provided = 0;
  CheckMpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw CommError("MPI offers thread level " + std::to_string(provided) +
                    "; twinflow's comm thread needs MPI_THREAD_SERIALIZED");
  }
  CheckMpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  CheckMpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  CheckMpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
           "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::Abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
}

void CheckMpi(int code, const std::string& call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommError(call + ": " + std::string(text, static_cast<size_t>(length)));
}

std::vector<std::vector<std::byte>> AllgatherBytes(const std::vector<std::byte>& bytes) {
  int size = 1;
  CheckMpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const int mine = static_cast<int>(bytes.size());
  std::vector<int> counts(static_cast<size_t>(size));
  CheckMpi(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD),
           "MPI_Allgather");
  std::vector<int> displs(counts.size(), 0);
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<std::byte> all(static_cast<size_t>(total));
  CheckMpi(MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), counts.data(), displs.data(),
                          MPI_BYTE, MPI_COMM_WORLD),
           "MPI_Allgatherv");
  std::vector<std::vector<std::byte>> result;
  for (size_t r = 0; r < counts.size(); ++r) {
    result.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
  }
  return result;
}

std::vector<std::string> AllgatherText(const std::string& text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  std::vector<std::string> all;
  for (const std::vector<std::byte>& bytes : AllgatherBytes({data, data + text.size()})) {
    all.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return all;
}

}  // namespace twinflow::comm
