#include "engine/compiler/plan_memory.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "engine/core/error.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/slot_alignment.h"

namespace twinflow::compiler {
namespace {

int64_t Aligned(int64_t bytes) {
  return (bytes + plan::kSlotAlignment - 1) / plan::kSlotAlignment * plan::kSlotAlignment;
}

// A register living inside a chain, over positions [first, last]. Positions count in halves:
// serial task i acts at 2i, and a floating collective between serial positions a and b runs
// over 2a + 1 .. 2b - 1, the gap in which the chain may have moved on.
struct Span {
  int64_t regst = 0;
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
  int64_t offset = 0;  // in the chain's pool
  int64_t alias = -1;  // an in-place all_reduce's input, at the same bytes (regst is its output)
};

// The data register (one with bytes) among `regsts`, or -1.
int64_t DataRegst(const plan::Plan& plan,
                  const google::protobuf::RepeatedField<google::protobuf::int64>& regsts) {
  for (int64_t r : regsts) {
    if (plan.regsts(static_cast<int>(r)).bytes_per_slot() > 0) return r;
  }
  return -1;
}

// Merges the spans of each in-place all_reduce's input and output into one, at one offset.
void MergeInPlace(const plan::Plan& plan, const std::map<int64_t, size_t>& span_of,
                  std::vector<Span>& spans) {
  std::vector<bool> gone(spans.size(), false);
  for (size_t i = 0; i < spans.size(); ++i) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(spans[i].regst));
    int64_t input = -1;  // the in-place input whose bytes this output reuses
    for (const auto& [in, out] :
         plan::InPlaceRegsts(plan, plan.tasks(static_cast<int>(regst.producer())))) {
      if (out == spans[i].regst) input = in;
    }
    const auto in = span_of.find(input);
    if (in == span_of.end()) continue;
    Span& merged = spans[i];
    merged.first = std::min(merged.first, spans[in->second].first);
    merged.last = std::max(merged.last, spans[in->second].last);
    merged.alias = spans[in->second].regst;
    gone[in->second] = true;
  }
  std::vector<Span> kept;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (!gone[i]) kept.push_back(spans[i]);
  }
  spans = std::move(kept);
}

// The registers living inside `chain`, with their spans.
std::vector<Span> SpansOf(const plan::Plan& plan, const TaskChain& chain) {
  std::map<int64_t, std::pair<int64_t, int64_t>> acts;  // task -> its first and last position
  for (size_t i = 0; i < chain.tasks.size(); ++i) {
    const auto at = static_cast<int64_t>(2 * i);
    acts[chain.tasks[i]] = {at, at};
  }
  for (const FloatingTask& f : chain.floating) acts[f.task] = {2 * f.after + 1, 2 * f.before - 1};
  std::vector<Span> spans;
  for (const auto& [task, extent] : acts) {
    for (int64_t r : plan.tasks(static_cast<int>(task)).produced_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() != 0 || regst.bytes_per_slot() == 0 || regst.consumers().empty()) continue;
      Span span{r, regst.bytes_per_slot(), extent.first, extent.first, 0};
      bool inside = true;
      for (int64_t c : regst.consumers()) {
        const auto it = acts.find(c);
        // A read in another copy of a folded Plan is another device's (plan_fold.h).
        if (it == acts.end() || plan::ReadsOtherCopies(plan.tasks(static_cast<int>(c)), r, false))
          inside = false;
        else
          span.last = std::max(span.last, it->second.second);
      }
      if (inside) spans.push_back(span);
    }
  }
  std::map<int64_t, size_t> span_of;  // by register
  for (size_t i = 0; i < spans.size(); ++i) span_of[spans[i].regst] = i;
  MergeInPlace(plan, span_of, spans);
  return spans;
}

// First fit, largest first: each register goes to the lowest offset where it overlaps no
// placed register whose span meets its own. Returns the pool size.
// The order PlaceSpans places `spans` in: largest first, ties by register id.
std::vector<size_t> PlacementOrder(const std::vector<Span>& spans) {
  std::vector<size_t> order(spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (spans[a].bytes != spans[b].bytes) return spans[a].bytes > spans[b].bytes;
    return spans[a].regst < spans[b].regst;
  });
  return order;
}

// PlaceSpans for many devices: the devices of a symmetric strategy have chains of the same
// shape (the same bytes and spans in the same placement order), so their pools are laid out
// once per shape and the offsets reused: the first-fit below is quadratic in a chain's
// registers, and a 128-device Plan would otherwise lay out the same pool 128 times.
// Lifetime: a local of PlanMemory.
class SpanPlacer {
 public:
  int64_t Place(std::vector<Span>& spans);

 private:
  struct Layout {
    std::vector<int64_t> offsets;  // in placement order
    int64_t pool = 0;
  };
  std::map<std::vector<int64_t>, Layout> layouts_;  // (bytes, first, last) in placement order
};

int64_t PlaceSpans(std::vector<Span>& spans, const std::vector<size_t>& order);

int64_t SpanPlacer::Place(std::vector<Span>& spans) {
  const std::vector<size_t> order = PlacementOrder(spans);
  std::vector<int64_t> shape;
  shape.reserve(3 * order.size());
  for (size_t i : order) shape.insert(shape.end(), {spans[i].bytes, spans[i].first, spans[i].last});
  const auto known = layouts_.find(shape);
  if (known != layouts_.end()) {
    for (size_t k = 0; k < order.size(); ++k) spans[order[k]].offset = known->second.offsets[k];
    return known->second.pool;
  }
  Layout layout;
  layout.pool = PlaceSpans(spans, order);
  for (size_t i : order) layout.offsets.push_back(spans[i].offset);
  const int64_t pool = layout.pool;
  layouts_.emplace(std::move(shape), std::move(layout));
  return pool;
}

int64_t PlaceSpans(std::vector<Span>& spans, const std::vector<size_t>& order) {
  std::vector<size_t> placed;
  int64_t pool = 0;
  for (size_t i : order) {
    Span& s = spans[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of conflicting registers
    for (size_t j : placed) {
      const Span& o = spans[j];
      if (o.first <= s.last && s.first <= o.last)
        taken.push_back({o.offset, o.offset + Aligned(o.bytes)});
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + Aligned(s.bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    s.offset = offset;
    pool = std::max(pool, offset + Aligned(s.bytes));
    placed.push_back(i);
  }
  return pool;
}

// The bytes of `spans` live at the position where the most are, by category.
CategoryBytes LargestLiveSum(const std::vector<Span>& spans,
                             const std::vector<MemoryCategory>& category) {
  std::map<int64_t, int64_t> delta;  // position -> bytes starting (or, negative, ending)
  for (const Span& s : spans) {
    delta[s.first] += s.bytes;
    delta[s.last + 1] -= s.bytes;
  }
  int64_t live = 0;
  int64_t most = 0;
  int64_t where = 0;
  for (const auto& [position, change] : delta) {
    live += change;
    if (live > most) std::tie(most, where) = std::pair{live, position};
  }
  CategoryBytes bytes{};
  for (const Span& s : spans) {
    if (most > 0 && s.first <= where && where <= s.last) {
      bytes[static_cast<int>(category[s.regst])] += s.bytes;
    }
  }
  return bytes;
}

// Each chain's device and the registers living inside it; `shared` marks them.
std::vector<std::pair<int, std::vector<Span>>> ChainPools(const plan::Plan& plan,
                                                          const std::vector<TaskChain>& chains,
                                                          std::vector<bool>& shared) {
  shared.assign(plan.regsts_size(), false);
  std::vector<std::pair<int, std::vector<Span>>> pools;
  for (const TaskChain& chain : chains) {
    std::vector<Span> spans = SpansOf(plan, chain);
    for (const Span& s : spans) {
      shared[s.regst] = true;
      if (s.alias >= 0) shared[s.alias] = true;
    }
    pools.emplace_back(chain.device, std::move(spans));
  }
  return pools;
}

// The planned peak of every device, by category: its own slots, plus each chain's largest
// live sum.
std::vector<CategoryBytes> Peaks(const plan::Plan& plan,
                                 const std::vector<std::pair<int, std::vector<Span>>>& pools,
                                 const std::vector<bool>& shared) {
  const std::vector<MemoryCategory> category = RegstCategories(plan);
  std::vector<CategoryBytes> peak(plan.devices_size(), CategoryBytes{});
  for (const plan::Regst& regst : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(regst.producer()));
    if (shared[regst.id()] || producer.repeat_in_place()) continue;
    peak[producer.device()][static_cast<int>(category[regst.id()])] +=
        regst.bytes_per_slot() * regst.slots();
  }
  for (const auto& [device, spans] : pools) {
    const CategoryBytes live = LargestLiveSum(spans, category);
    for (int c = 0; c < kMemoryCategories; ++c) peak[device][c] += live[c];
  }
  return peak;
}

int64_t Total(const CategoryBytes& bytes) {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  return total;
}

bool SameTensor(const plan::TensorDesc& a, const plan::TensorDesc& b) {
  return a.dtype() == b.dtype() &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end());
}

// Whether all_reduce `t` of `chain` (its tasks in `inside`) can sum in place: each input is
// the chain's, read by it alone, and each output stays in the chain (register spans, above).
bool CanReduceInPlace(const plan::Plan& plan, int64_t t, const std::set<int64_t>& inside) {
  const plan::Task& task = plan.tasks(static_cast<int>(t));
  if (task.kind() != plan::COLLECTIVE || task.collective().kind() != plan::ALL_REDUCE) return false;
  const std::vector<std::pair<int64_t, int64_t>> pairs = plan::DataPairs(plan, task);
  if (pairs.empty()) return false;
  for (const auto& [in, out] : pairs) {
    const plan::Regst& input = plan.regsts(static_cast<int>(in));
    const plan::Regst& output = plan.regsts(static_cast<int>(out));
    if (input.lag() != 0 || output.lag() != 0 || input.consumers_size() != 1 ||
        inside.count(input.producer()) == 0 || output.consumers().empty() ||
        !SameTensor(input.tensor(), output.tensor())) {
      return false;
    }
    for (int64_t c : output.consumers()) {
      if (inside.count(c) == 0 ||
          plan::ReadsOtherCopies(plan.tasks(static_cast<int>(c)), out, false))
        return false;
    }
  }
  return true;
}

// Whether REPEAT `task` can read in place (Task.repeat_in_place): its input has one slot of
// bytes of its own on the REPEAT's device that nothing writes in place (not a variable, which
// an ASSIGN updates, nor another REPEAT's output, which may be borrowed bytes itself), so
// every output slot can be those bytes, held until the outputs come back. A weight's 16-bit
// copy is then held once, not once more per pass that repeats it (up to two slots each).
bool CanRepeatInPlace(const plan::Plan& plan, const plan::Task& task) {
  if (task.kind() != plan::REPEAT) return false;
  const int64_t in = DataRegst(plan, task.consumed_regsts());
  const int64_t out = DataRegst(plan, task.produced_regsts());
  if (in < 0 || out < 0) return false;
  const plan::Regst& input = plan.regsts(static_cast<int>(in));
  const plan::Task& producer = plan.tasks(static_cast<int>(input.producer()));
  return input.slots() == 1 && input.lag() == 0 && producer.kind() != plan::VARIABLE &&
         producer.kind() != plan::REPEAT && producer.device() == task.device() &&
         SameTensor(input.tensor(), plan.regsts(static_cast<int>(out)).tensor());
}

// Marks every all_reduce of the chains that can sum in place (CollectiveDesc.in_place) and
// every REPEAT that can read in place, and clears the marks elsewhere, so that planning again
// gives the same Plan.
void MarkInPlace(plan::Plan& plan, const std::vector<TaskChain>& chains) {
  for (plan::Task& t : *plan.mutable_tasks()) {
    if (t.kind() == plan::COLLECTIVE) t.mutable_collective()->set_in_place(false);
    if (t.kind() == plan::REPEAT) t.set_repeat_in_place(CanRepeatInPlace(plan, t));
  }
  for (const TaskChain& chain : chains) {
    std::set<int64_t> inside(chain.tasks.begin(), chain.tasks.end());
    for (const FloatingTask& f : chain.floating) inside.insert(f.task);
    for (int64_t t : inside) {
      if (CanReduceInPlace(plan, t, inside)) {
        plan.mutable_tasks(static_cast<int>(t))->mutable_collective()->set_in_place(true);
      }
    }
  }
}

}  // namespace

std::vector<bool> ChainResidentRegsts(const plan::Plan& plan,
                                      const std::vector<TaskChain>& chains) {
  std::vector<bool> shared;
  ChainPools(plan, chains, shared);
  return shared;
}

std::vector<CategoryBytes> PlannedPeaks(const plan::Plan& plan) {
  std::vector<bool> shared;
  const auto pools = ChainPools(plan, FindTaskChains(plan), shared);
  return Peaks(plan, pools, shared);
}

void PlanMemory(plan::Plan& plan, const std::vector<TaskChain>& chains) {
  const int devices = plan.devices_size();
  plan.clear_memory();
  std::vector<int64_t> next(devices, 0);  // the next free offset
  std::vector<int64_t> end(devices, 0);   // where the highest slot ends
  std::vector<std::vector<plan::SlotOffset>> offsets(devices);
  const auto place = [&](int device, int64_t regst, int32_t slot, int64_t offset, int64_t bytes) {
    plan::SlotOffset o;
    o.set_regst(regst);
    o.set_slot(slot);
    o.set_offset(offset);
    offsets[device].push_back(o);
    end[device] = std::max(end[device], offset + bytes);
  };

  MarkInPlace(plan, chains);
  std::vector<bool> shared;
  auto pools = ChainPools(plan, chains, shared);
  for (const auto& [device, spans] : pools) {
    for (const Span& s : spans) {
      for (const int64_t r : {s.regst, s.alias}) {
        if (r < 0 || plan.regsts(static_cast<int>(r)).slots() == 1) continue;
        throw PlanError("register " + std::to_string(r) + " lives inside a chain of device " +
                        std::to_string(device) + " but has " +
                        std::to_string(plan.regsts(static_cast<int>(r)).slots()) +
                        " slots: slot counts are decided (DecideSlotCounts) before memory");
      }
    }
  }
  const std::vector<CategoryBytes> peak = Peaks(plan, pools, shared);
  std::vector<int64_t> own_offset(plan.regsts_size(), -1);  // slot 0's
  for (const plan::Regst& regst : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(regst.producer()));
    if (shared[regst.id()] || producer.repeat_in_place()) continue;
    own_offset[regst.id()] = next[producer.device()];
    for (int32_t slot = 0; slot < regst.slots(); ++slot) {
      place(producer.device(), regst.id(), slot, next[producer.device()], regst.bytes_per_slot());
      next[producer.device()] += Aligned(regst.bytes_per_slot());
    }
  }
  for (const plan::Task& t : plan.tasks()) {  // in-place REPEATs: every slot at the input's
    const auto io = plan::RepeatInPlaceRegsts(plan, t);
    if (!io) continue;
    const plan::Regst& out = plan.regsts(static_cast<int>(io->second));
    if (own_offset[io->first] < 0)
      throw PlanError("in-place REPEAT " + t.name() + " reads a register without bytes of its own");
    for (int32_t slot = 0; slot < out.slots(); ++slot)
      place(t.device(), out.id(), slot, own_offset[io->first], out.bytes_per_slot());
  }
  SpanPlacer placer;
  for (auto& [device, spans] : pools) {
    const int64_t pool = placer.Place(spans);
    for (const Span& s : spans) {
      place(device, s.regst, 0, next[device] + s.offset, s.bytes);
      if (s.alias >= 0) place(device, s.alias, 0, next[device] + s.offset, s.bytes);
    }
    next[device] += pool;
  }
  for (int d = 0; d < devices; ++d) {
    std::sort(offsets[d].begin(), offsets[d].end(), [](const auto& a, const auto& b) {
      return std::make_pair(a.regst(), a.slot()) < std::make_pair(b.regst(), b.slot());
    });
    plan::MemoryPlan* m = plan.add_memory();
    m->set_device(d);
    m->set_arena_bytes(end[d]);
    m->set_peak_bytes(Total(peak[d]));
    for (plan::SlotOffset& o : offsets[d]) *m->add_offsets() = std::move(o);
  }
}

}  // namespace twinflow::compiler
