#include "engine/graph/nd_signature_cache.h"

#include <cstring>

namespace twinflow::graph {
namespace {

void AppendInt(std::string& key, int64_t value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Everything NdSignatures reads, exactly: doubles by their bits, strings with their lengths.
std::string KeyOf(const OpContext& ctx, const Shape& hierarchy) {
  std::string key = ctx.type;
  AppendInt(key, static_cast<int64_t>(ctx.attrs.values().size()));
  for (const auto& [name, value] : ctx.attrs.values()) {
    AppendInt(key, static_cast<int64_t>(name.size()));
    key += name;
    AppendInt(key, static_cast<int64_t>(value.index()));
    if (const auto* i = std::get_if<int64_t>(&value)) AppendInt(key, *i);
    if (const auto* b = std::get_if<bool>(&value)) AppendInt(key, *b ? 1 : 0);
    if (const auto* d = std::get_if<double>(&value)) {
      int64_t bits = 0;
      std::memcpy(&bits, d, sizeof(bits));
      AppendInt(key, bits);
    }
    if (const auto* s = std::get_if<std::string>(&value)) {
      AppendInt(key, static_cast<int64_t>(s->size()));
      key += *s;
    }
    if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
      AppendInt(key, static_cast<int64_t>(list->size()));
      for (int64_t x : *list) AppendInt(key, x);
    }
  }
  for (const TensorMeta& meta : ctx.inputs) {
    AppendInt(key, static_cast<int64_t>(meta.dtype));
    AppendInt(key, meta.shape.rank());
    for (int64_t d : meta.shape.dims()) AppendInt(key, d);
  }
  AppendInt(key, hierarchy.rank());
  for (int64_t d : hierarchy.dims()) AppendInt(key, d);
  return key;
}

}  // namespace

const std::vector<NdSbpSignature>& NdSignatureCache::Get(const OpDef& def, const OpContext& ctx,
                                                         const Shape& hierarchy) {
  std::string key = KeyOf(ctx, hierarchy);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    it = cache_.emplace(std::move(key), NdSignatures(def, ctx, hierarchy)).first;
  }
  return it->second;
}

}  // namespace twinflow::graph
