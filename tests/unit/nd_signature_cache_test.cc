// NdSignatureCache: the same signatures as NdSignatures, computed once per distinct op, with
// every attribute compared exactly (two doubles that print alike are two keys).
#include "engine/graph/nd_signature_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/graph/op_def.h"

namespace twinflow::graph {
namespace {

using sbp::Sbp;

// Splits its input on axis 0 only while attribute "limit" is below 1; counts its calls.
OpDef CountingOp(int& calls) {
  OpDef def;
  def.type = "counting";
  def.infer = [](const OpContext& ctx) { return std::vector<TensorMeta>{ctx.inputs[0]}; };
  def.signatures = [&calls](const OpContext& ctx, int64_t) {
    ++calls;
    std::vector<SbpSignature> sigs = {{{Sbp::Broadcast()}, {Sbp::Broadcast()}}};
    if (ctx.attrs.GetDouble("limit") < 1) sigs.push_back({{Sbp::Split(0)}, {Sbp::Split(0)}});
    return sigs;
  };
  return def;
}

std::vector<std::string> Texts(const std::vector<NdSbpSignature>& sigs) {
  std::vector<std::string> texts;
  for (const NdSbpSignature& s : sigs) texts.push_back(s.ToString());
  return texts;
}

TEST(NdSignatureCache, MatchesNdSignaturesAndComputesEachOpOnce) {
  int calls = 0;
  const OpDef def = CountingOp(calls);
  const Attrs below{{"limit", 0.999999999}}, above{{"limit", 1.0}};
  const std::vector<TensorMeta> inputs{{Shape{8, 4}, DType::kF32}};
  const std::vector<TensorMeta> other{{Shape{8, 4}, DType::kBF16}};
  NdSignatureCache cache;
  const auto& first = cache.Get(def, {def.type, below, inputs}, Shape{2, 2});
  const int per_enumeration = calls;
  EXPECT_EQ(Texts(first), Texts(NdSignatures(def, {def.type, below, inputs}, Shape{2, 2})));
  calls = per_enumeration;
  // The same op again: the same vector, no enumeration.
  EXPECT_EQ(&cache.Get(def, {def.type, below, inputs}, Shape{2, 2}), &first);
  EXPECT_EQ(calls, per_enumeration);
  // An attribute printed alike ("1"), another dtype, another mesh: each enumerated anew.
  EXPECT_EQ(Texts(cache.Get(def, {def.type, above, inputs}, Shape{2, 2})),
            Texts(NdSignatures(def, {def.type, above, inputs}, Shape{2, 2})));
  EXPECT_NE(cache.Get(def, {def.type, above, inputs}, Shape{2, 2}).size(), first.size());
  EXPECT_NE(&cache.Get(def, {def.type, below, other}, Shape{2, 2}), &first);
  EXPECT_NE(&cache.Get(def, {def.type, below, inputs}, Shape{4}), &first);
}

}  // namespace
}  // namespace twinflow::graph
