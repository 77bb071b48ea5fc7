#pragma once
// NdSignatureCache: NdSignatures memoised. A model repeats the same ops layer after layer, and
// an op's N-D signatures depend only on its type, attributes, input metas and mesh, so a
// 36-layer GPT enumerates each kind once instead of 36 times (the products over mesh axes,
// shape checks and deduplication were a tenth of compiling SC'21's 7.5B model).
#include <map>
#include <string>
#include <vector>

#include "engine/graph/op_def.h"

namespace twinflow::graph {

class NdSignatureCache {
 public:
  // NdSignatures(def, ctx, hierarchy); the reference lives as long as the cache.
  const std::vector<NdSbpSignature>& Get(const OpDef& def, const OpContext& ctx,
                                         const Shape& hierarchy);

 private:
  std::map<std::string, std::vector<NdSbpSignature>> cache_;
};

}  // namespace twinflow::graph
