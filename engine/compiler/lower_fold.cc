// Folded lowering (LowerOptions::fold): only copy 0 of a data-parallel symmetry gets tasks. The
// checks here make sure the other copies would have run the images of those tasks: every
// placement holds every copy's images, shards are as large in every copy, and a collective
// group either stays in one copy or spans all of them alike.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/compiler/lower_internal.h"
#include "engine/sbp/slicing.h"

namespace twinflow::compiler::lowering {

const std::vector<int64_t>& Lowerer::LastImages(const Placement& placement) {
  const auto cached = last_images_.find(placement.device_ids());
  if (cached != last_images_.end()) return cached->second;
  std::map<int64_t, int64_t> index;  // device id -> parallel index
  for (int64_t j = 0; j < placement.size(); ++j) index[placement.device_ids()[j]] = j;
  std::vector<int64_t> last(placement.size(), -1);
  int64_t stored = 0;
  for (int64_t j = 0; j < placement.size(); ++j) {
    const int64_t id = placement.device_ids()[j];
    if (!fold_.Stored(id)) continue;
    ++stored;
    for (int c = 1; c < fold_.copies; ++c) {
      const auto image = index.find(fold_.Image(id, c));
      if (image == index.end()) {
        throw FoldError("placement " + placement.ToString() + " holds device " +
                        std::to_string(id) + " but not its image " +
                        std::to_string(fold_.Image(id, c)) + " in copy " + std::to_string(c));
      }
      last[j] = image->second;
    }
  }
  if (stored * fold_.copies != placement.size()) {
    throw FoldError("placement " + placement.ToString() + " holds devices that are no image of " +
                    "its devices in copy 0");
  }
  return last_images_[placement.device_ids()] = std::move(last);
}

void Lowerer::CheckSymmetricShard(const Shape& shape, const Layout& layout, int64_t j) {
  if (!fold_.folded()) return;
  const int64_t image = LastImages(layout.placement)[j];
  const Shape first = sbp::PhysicalShape(shape, layout, j);
  const Shape last = sbp::PhysicalShape(shape, layout, image);
  if (first == last) return;
  // An uneven split gives the first copies one element more along its axis than the last
  // (copy 0's is the longest): simulated as copy 0's, a bound off by under one part in the
  // shard's length. Anything else breaks the symmetry.
  bool uneven = first.rank() == last.rank();
  for (int k = 0; uneven && k < first.rank(); ++k)
    uneven = first[k] == last[k] || first[k] == last[k] + 1;
  if (!uneven) {
    throw FoldError("a tensor of shape " + shape.ToString() + " laid out as " + layout.ToString() +
                    " has shards of different shapes in the first and the last copy");
  }
  plan_.mutable_fold()->set_uneven_shards(true);
}

std::pair<int64_t, int32_t> Lowerer::InCopyZero(const Placement& placement, int64_t j) {
  const std::vector<int64_t>& ids = placement.device_ids();
  const int64_t id = ids[j];
  if (fold_.Stored(id)) return {j, 0};
  const int64_t image = fold_.Canonical(id);
  const auto missing = [&] {
    return FoldError("placement " + placement.ToString() + " holds device " + std::to_string(id) +
                     " but not its image in copy 0");
  };
  int64_t k = 0;
  if (placement.ids_ascend()) {  // the common case: a binary search, no index to build
    const auto it = std::lower_bound(ids.begin(), ids.end(), image);
    if (it == ids.end() || *it != image) throw missing();
    k = it - ids.begin();
  } else {
    std::map<int64_t, int64_t>& index = parallel_index_[ids];
    if (index.empty()) {
      for (int64_t i = 0; i < placement.size(); ++i) index[ids[i]] = i;
    }
    const auto it = index.find(image);
    if (it == index.end()) throw missing();
    k = it->second;
  }
  return {k, static_cast<int32_t>(id % fold_.block / fold_.stride)};
}

std::vector<int64_t> Lowerer::StoredMembers(const Placement& placement,
                                            const std::vector<int64_t>& members) {
  std::vector<int64_t> stored;
  for (int64_t j : members) {
    if (Stored(placement, j)) stored.push_back(j);
  }
  if (stored.empty() || stored.size() == members.size()) return stored;
  std::vector<int64_t> images, ids;
  for (int c = 0; c < fold_.copies; ++c) {
    for (int64_t j : stored) images.push_back(fold_.Image(placement.device_ids()[j], c));
  }
  for (int64_t j : members) ids.push_back(placement.device_ids()[j]);
  std::sort(images.begin(), images.end());
  std::sort(ids.begin(), ids.end());
  if (images != ids) {
    throw FoldError("a collective over " + std::to_string(members.size()) + " devices of " +
                    placement.ToString() + " spans the copies unevenly");
  }
  return stored;
}

}  // namespace twinflow::compiler::lowering
