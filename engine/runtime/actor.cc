#include "engine/runtime/actor.h"

#include <algorithm>
#include <set>

#include "engine/core/error.h"

namespace twinflow::runtime {

namespace {

std::string RegstText(int64_t regst) { return "regst " + std::to_string(regst); }

}  // namespace

Actor::Actor(const plan::Plan& plan, int64_t task, int64_t pieces)
    : plan_(plan), task_(task), source_pieces_(pieces) {
  if (task < 0 || task >= plan.tasks_size()) {
    throw PlanError("actor for task " + std::to_string(task) + ": the plan has " +
                    std::to_string(plan.tasks_size()) + " tasks");
  }
  const plan::Task& t = plan.tasks(static_cast<int>(task));
  kind_ = t.kind();
  if (kind_ == plan::TASK_KIND_UNSPECIFIED) Fail("has no kind");
  if (kind_ == plan::ACC) rate_ = t.acc_count();
  if (kind_ == plan::REPEAT) rate_ = t.repeat_count();
  lends_input_ = kind_ == plan::REPEAT && t.repeat_in_place();
  if (rate_ < 1) Fail("has a non-positive acc_count or repeat_count " + std::to_string(rate_));
  if (IsSource() && pieces < 0) Fail("is given " + std::to_string(pieces) + " pieces");
  if (!IsSource() && t.consumed_regsts_size() == 0) {
    Fail("consumes no register, so it would never stop acting");
  }
  for (int64_t id : t.consumed_regsts()) {
    if (id < 0 || id >= plan.regsts_size()) Fail("consumes unknown " + RegstText(id));
    const plan::Regst& r = plan.regsts(static_cast<int>(id));
    if (std::find(r.consumers().begin(), r.consumers().end(), task) == r.consumers().end()) {
      Fail("consumes " + RegstText(id) + ", which does not list it as a consumer");
    }
    if (r.slots() < 1 || r.lag() < 0) Fail("consumes " + RegstText(id) + " with bad slots or lag");
    if (r.producer() < 0 || r.producer() >= plan.tasks_size()) {
      Fail("consumes " + RegstText(id) + ", whose producer " + std::to_string(r.producer()) +
           " is not a task");
    }
    if (inputs_.count(id)) Fail("consumes " + RegstText(id) + " twice");
    Input& in = inputs_[id];
    in.regst = id;
    in.producer = r.producer();
    in.slots = r.slots();
    in.lag = r.lag();
    in.order.assign(r.order_counts().begin(), r.order_counts().end());
    if (!in.order.empty() && (r.lag() != 0 || r.tensor().dtype() != plan::DTYPE_UNSPECIFIED)) {
      Fail("consumes order " + RegstText(id) + ", which has a lag or carries data");
    }
    input_order_.push_back(id);
  }
  for (int64_t id : t.produced_regsts()) {
    if (id < 0 || id >= plan.regsts_size()) Fail("produces unknown " + RegstText(id));
    const plan::Regst& r = plan.regsts(static_cast<int>(id));
    if (r.producer() != task)
      Fail("produces " + RegstText(id) + ", whose producer is another task");
    if (r.slots() < 1) Fail("produces " + RegstText(id) + " with no slots");
    if (outputs_.count(id)) Fail("produces " + RegstText(id) + " twice");
    std::set<int64_t> consumers(r.consumers().begin(), r.consumers().end());
    if (consumers.size() != static_cast<size_t>(r.consumers_size())) {
      Fail("produces " + RegstText(id) + ", which lists a consumer twice");
    }
    if (!consumers.empty() &&
        (*consumers.begin() < 0 || *consumers.rbegin() >= plan.tasks_size())) {
      Fail("produces " + RegstText(id) + ", which lists a consumer that is not a task");
    }
    Output& o = outputs_[id];
    o.regst = id;
    o.slots = r.slots();
    o.consumers.assign(r.consumers().begin(), r.consumers().end());
    o.holders.assign(static_cast<size_t>(r.slots()), 0);
    o.every_act = r.tensor().dtype() == plan::DTYPE_UNSPECIFIED;
    output_order_.push_back(id);
  }
}

// A RECV is paced by its peer SEND on another rank, so the executor tells it how often to act.
bool Actor::IsSource() const {
  return kind_ == plan::SOURCE || kind_ == plan::VARIABLE || kind_ == plan::RECV;
}
bool Actor::StartsInput(int64_t act) const { return kind_ != plan::REPEAT || act % rate_ == 0; }
bool Actor::EndsInput(int64_t act) const {
  return kind_ != plan::REPEAT || act % rate_ == rate_ - 1;
}
bool Actor::StartsOutput(const Output& o, int64_t act) const {
  return kind_ != plan::ACC || o.every_act || act % rate_ == 0;
}
bool Actor::EndsOutput(const Output& o, int64_t act) const {
  return kind_ != plan::ACC || o.every_act || act % rate_ == rate_ - 1;
}

int64_t Actor::NeededPiece(const Input& in, int64_t act) const {
  const int64_t index = kind_ == plan::REPEAT ? act / rate_ : act;
  return index >= in.lag ? index - in.lag : -1;
}

int64_t Actor::OrderNeeds(const Input& in, int64_t act) const {
  if (in.order.empty()) return 0;
  const auto period = static_cast<int64_t>(in.order.size());
  return act / period * period + in.order[static_cast<size_t>(act % period)];
}

bool Actor::Ready(const Input& in, int64_t act) const {
  if (!in.order.empty()) return in.next >= OrderNeeds(in, act);  // pieces below next were made
  const int64_t piece = NeededPiece(in, act);
  return piece < 0 || in.ready.count(piece) > 0;
}

// Monotone: once some input has announced fewer pieces than the next act needs, or a source
// has made all its pieces, no later message can enable another act.
bool Actor::NoMoreActs() const {
  if (IsSource() && acts_ >= source_pieces_) return true;
  if (!StartsInput(acts_)) return false;  // a REPEAT in the middle of its input piece
  for (const auto& [id, in] : inputs_) {
    const int64_t piece = in.order.empty() ? NeededPiece(in, acts_) : OrderNeeds(in, acts_) - 1;
    if (piece >= 0 && in.eord >= 0 && piece >= in.eord) return true;
  }
  return false;
}

void Actor::Start(Outbox& out) { TryAct(out); }

void Actor::TryAct(Outbox& out) {
  if (busy_ || stopped_) return;
  if (NoMoreActs()) {
    StopActing(out);
    return;
  }
  const int64_t act = acts_;
  if (StartsInput(act)) {
    for (const auto& [id, in] : inputs_) {
      if (in.lent || !Ready(in, act)) return;
    }
  }
  for (const auto& [id, o] : outputs_) {
    if (StartsOutput(o, act) && o.holders[static_cast<size_t>(o.produced % o.slots)] > 0) return;
  }
  Launch launch;
  launch.task = task_;
  launch.piece = act;
  for (int64_t id : input_order_) {
    Input& in = inputs_.at(id);
    const int64_t piece = NeededPiece(in, act);
    if (piece < 0 || !in.order.empty()) continue;
    if (StartsInput(act)) {
      auto it = in.ready.find(piece);
      in.use = SlotRef{id, it->second, piece};
      in.in_use = true;
      in.ready.erase(it);
      in.next = piece + 1;
    }
    launch.inputs.push_back(in.use);
  }
  for (int64_t id : output_order_) {
    const Output& o = outputs_.at(id);
    launch.outputs.push_back(SlotRef{id, static_cast<int32_t>(o.produced % o.slots), o.produced});
  }
  if (kind_ == plan::ACC || kind_ == plan::REPEAT) {
    launch.first = act % rate_ == 0;
    launch.last = act % rate_ == rate_ - 1;
  }
  busy_ = true;
  out.launches.push_back(std::move(launch));
}

void Actor::Done(Outbox& out) {
  if (!busy_) Fail("got Done with no act in flight");
  const int64_t act = acts_++;
  busy_ = false;
  // Inputs go back before outputs are announced: an executor that delivers in order frees a
  // slot before a task the announcement wakes can reuse its bytes.
  if (EndsInput(act)) {
    for (auto& [id, in] : inputs_) {
      if (!in.in_use) continue;
      if (lends_input_) {
        in.lent = true;  // returned by ReturnLentInputs, once the outputs below come back
        continue;
      }
      in.in_use = false;
      out.messages.push_back(Envelope{in.producer, RegstFree{id, in.use.slot}});
    }
  }
  for (auto& [id, o] : outputs_) {
    if (!EndsOutput(o, act)) continue;
    const int32_t slot = static_cast<int32_t>(o.produced % o.slots);
    o.holders[static_cast<size_t>(slot)] = static_cast<int32_t>(o.consumers.size());
    for (int64_t consumer : o.consumers) {
      out.messages.push_back(Envelope{consumer, RegstReady{id, slot, o.produced}});
    }
    ++o.produced;
  }
  ReturnLentInputs(out);
  TryAct(out);
}

void Actor::ReturnLentInputs(Outbox& out) {
  for (const auto& [id, o] : outputs_) {
    for (int32_t holders : o.holders) {
      if (holders > 0) return;
    }
  }
  for (auto& [id, in] : inputs_) {
    if (!in.lent) continue;
    in.lent = false;
    in.in_use = false;
    out.messages.push_back(Envelope{in.producer, RegstFree{id, in.use.slot}});
  }
}

void Actor::StopActing(Outbox& out) {
  if (kind_ == plan::ACC && acts_ % rate_ != 0) {
    Fail("ran out of input after " + std::to_string(acts_) +
         " acts, which is not a multiple of acc_count " + std::to_string(rate_));
  }
  stopped_ = true;
  for (auto& [id, in] : inputs_) {
    while (!in.ready.empty()) {
      auto it = in.ready.begin();
      const auto [piece, slot] = *it;
      in.ready.erase(it);
      ReturnUnused(in, piece, slot, out);
    }
  }
  for (const auto& [id, o] : outputs_) {
    for (int64_t consumer : o.consumers) {
      out.messages.push_back(Envelope{consumer, Eord{id, o.produced}});
    }
  }
}

// A lagged piece that arrives after the last act, or any piece of an order register: hand the
// slot straight back; `next` then counts the pieces made without a gap.
void Actor::ReturnUnused(Input& in, int64_t piece, int32_t slot, Outbox& out) {
  out.messages.push_back(Envelope{in.producer, RegstFree{in.regst, slot}});
  in.returned_unused.insert(piece);
  while (in.returned_unused.erase(in.next)) ++in.next;
}

void Actor::Receive(const ActorMessage& message, Outbox& out) {
  if (const auto* ready = std::get_if<RegstReady>(&message)) {
    OnReady(*ready);
    Input& in = inputs_.at(ready->regst);
    if (!in.order.empty() || stopped_) {  // an order register's piece is only counted
      in.ready.erase(ready->piece);
      ReturnUnused(in, ready->piece, ready->slot, out);
    }
  } else if (const auto* free = std::get_if<RegstFree>(&message)) {
    OnFree(*free);
    ReturnLentInputs(out);
  } else {
    OnEord(std::get<Eord>(message));
  }
  TryAct(out);
}

void Actor::OnReady(const RegstReady& m) {
  Input& in = FindInput(m.regst, "RegstReady");
  const std::string what = "RegstReady for " + RegstText(m.regst) + " slot " +
                           std::to_string(m.slot) + " piece " + std::to_string(m.piece);
  if (m.slot < 0 || m.slot >= in.slots) Fail("got " + what + ": no such slot");
  if (m.piece < 0 || (in.eord >= 0 && m.piece >= in.eord)) {
    Fail("got " + what + " beyond the register's " + std::to_string(in.eord) + " pieces");
  }
  if (m.piece < in.next || in.ready.count(m.piece) || in.returned_unused.count(m.piece)) {
    Fail("got " + what + " twice");
  }
  bool slot_held = in.in_use && in.use.slot == m.slot;
  for (const auto& [piece, slot] : in.ready) slot_held = slot_held || slot == m.slot;
  if (slot_held) Fail("got " + what + " while it still holds that slot");
  in.ready[m.piece] = m.slot;
  ++in.received;
  in.max_piece = std::max(in.max_piece, m.piece);
}

void Actor::OnFree(const RegstFree& m) {
  auto it = outputs_.find(m.regst);
  if (it == outputs_.end())
    Fail("got RegstFree for " + RegstText(m.regst) + ", which it does not produce");
  Output& o = it->second;
  if (m.slot < 0 || m.slot >= o.slots || o.holders[static_cast<size_t>(m.slot)] == 0) {
    Fail("got RegstFree for " + RegstText(m.regst) + " slot " + std::to_string(m.slot) +
         ", which is not outstanding");
  }
  --o.holders[static_cast<size_t>(m.slot)];
}

void Actor::OnEord(const Eord& m) {
  Input& in = FindInput(m.regst, "Eord");
  if (in.eord >= 0) Fail("got a second Eord for " + RegstText(m.regst));
  if (m.pieces < 0 || m.pieces <= in.max_piece) {
    Fail("got Eord for " + RegstText(m.regst) + " with " + std::to_string(m.pieces) +
         " pieces after piece " + std::to_string(in.max_piece));
  }
  in.eord = m.pieces;
}

Actor::Input& Actor::FindInput(int64_t regst, const char* what) {
  auto it = inputs_.find(regst);
  if (it == inputs_.end()) {
    Fail(std::string("got ") + what + " for " + RegstText(regst) + ", which it does not consume");
  }
  return it->second;
}

bool Actor::finished() const {
  if (!stopped_ || busy_) return false;
  for (const auto& [id, in] : inputs_) {
    if (in.eord < 0 || in.received != in.eord || !in.ready.empty() || in.in_use) return false;
  }
  for (const auto& [id, o] : outputs_) {
    for (int32_t holders : o.holders) {
      if (holders > 0) return false;
    }
  }
  return true;
}

std::string Actor::TaskName(int64_t task) const {
  if (task >= 0 && task < plan_.tasks_size()) {
    const std::string& name = plan_.tasks(static_cast<int>(task)).name();
    if (!name.empty()) return name;
  }
  return "task " + std::to_string(task);
}

void Actor::Fail(const std::string& what) const {
  throw PlanError("actor " + TaskName(task_) + " " + what);
}

}  // namespace twinflow::runtime
