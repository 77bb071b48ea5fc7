#include "engine/compiler/slot_counts.h"

#include <algorithm>

#include "engine/compiler/plan_memory.h"
#include "engine/plan/plan_fold.h"

namespace twinflow::compiler {
namespace {

// Rule 4: the micro-batches a per-micro-batch register lets its producer run ahead.
int32_t ScheduledSlots(const plan::Plan& plan, const plan::Regst& regst,
                       const SlotSchedule& schedule) {
  bool only_acc = regst.consumers_size() > 0;
  for (int64_t c : regst.consumers()) only_acc = only_acc && plan.tasks(c).kind() == plan::ACC;
  if (only_acc) return 1;
  const plan::Task& producer = plan.tasks(static_cast<int>(regst.producer()));
  const auto found = schedule.ahead.find({producer.device(), producer.stage()});
  int64_t ahead = found != schedule.ahead.end() ? found->second : schedule.micro_batches;
  if (producer.kind() == plan::REPEAT) ahead = std::min<int64_t>(ahead, 2);
  // Read only on other devices (a stage's output sent to the next stage): the receiver keeps
  // its own copy for as long as it needs, so the sender's need not wait for that.
  bool sent = true;
  for (int64_t c : regst.consumers()) {
    const plan::Task& consumer = plan.tasks(static_cast<int>(c));
    sent = sent && (consumer.device() != producer.device() ||
                    plan::ReadsOtherCopies(consumer, regst.id(), true));
  }
  if (sent) ahead = std::min<int64_t>(ahead, 2);
  return static_cast<int32_t>(std::max<int64_t>(1, ahead));
}

}  // namespace

void DecideSlotCounts(plan::Plan& plan, const std::vector<TaskChain>& chains,
                      const std::optional<SlotSchedule>& schedule) {
  const std::vector<bool> in_chain = ChainResidentRegsts(plan, chains);
  for (plan::Regst& regst : *plan.mutable_regsts()) {
    const size_t id = static_cast<size_t>(regst.id());
    int32_t slots = 1;
    if (regst.order_counts_size() > 0) {
      slots = regst.order_counts_size();
    } else if (in_chain[id]) {
      slots = 1;
    } else if (!schedule) {
      slots = regst.slots() > 0 ? regst.slots() : std::max(1, regst.lag());
    } else if (regst.lag() > 0) {
      slots = std::max(1, regst.lag());
    } else if (schedule->micro_batches > 1 && id < schedule->per_micro_batch.size() &&
               schedule->per_micro_batch[id]) {
      slots = ScheduledSlots(plan, regst, *schedule);
    }
    regst.set_slots(slots);
  }
}

}  // namespace twinflow::compiler
