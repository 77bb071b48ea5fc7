#pragma once
// What parallelism each op family really got: for every forward op type, how its ops are laid
// out along each mesh axis under the search's signatures, in the names a Megatron user reads
// (graph::ParallelismName: column, row, rows, vocabulary, replicated...). `explain`, `sim` and
// `tune` print it, so a strategy label can be checked against what runs.
#include <map>
#include <string>
#include <vector>

#include "engine/compiler/sbp_search.h"

namespace twinflow::compiler {

struct FamilyParallelism {
  std::string type;  // the op type
  int ops = 0;
  // By mesh axis: how many of the ops got each name on that axis (axes of one device: none).
  std::vector<std::map<std::string, int>> axes;
};

// The forward ops (not sources, not the backward pass or the optimizer), by op type in name
// order.
std::vector<FamilyParallelism> ParallelismByFamily(const graph::LogicalGraph& graph,
                                                   const graph::OpRegistry& registry,
                                                   const SbpAssignment& assignment);

// A table, one line per family: "  matmul  9 ops  axis 1: 6 column, 3 row".
std::string ParallelismTable(const std::vector<FamilyParallelism>& families);

}  // namespace twinflow::compiler
