#include "simulator/network/link_network.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace twinflow::sim {

LinkNetwork::LinkNetwork(EventQueue& queue, const std::vector<double>& bandwidths)
    : queue_(queue), links_(bandwidths.size()) {
  for (size_t l = 0; l < bandwidths.size(); ++l) links_[l].bandwidth = bandwidths[l] * 1e-9;
}

Nanos LinkNetwork::BusyTime(int link) const {
  const Link& l = links_[link];
  return l.busy + (l.flows.empty() ? 0 : queue_.now() - l.busy_since);
}

void LinkNetwork::Start(const std::vector<FlowSpec>& flows, Nanos latency,
                        std::function<void()> done) {
  const Nanos now = queue_.now();
  int transfer = -1;
  std::vector<int> seeds;
  for (const FlowSpec& spec : flows) {
    if (!(spec.bytes > 0) || spec.links.empty()) continue;
    if (transfer < 0) {
      if (free_transfers_.empty()) {
        free_transfers_.push_back(static_cast<int>(transfers_.size()));
        transfers_.emplace_back();
      }
      transfer = free_transfers_.back();
      free_transfers_.pop_back();
      transfers_[transfer] = Transfer{0, latency, std::move(done)};
    }
    if (free_flows_.empty()) {
      free_flows_.push_back(static_cast<int>(flows_.size()));
      flows_.emplace_back();
    }
    const int id = free_flows_.back();
    free_flows_.pop_back();
    Flow& f = flows_[id];
    f.links = spec.links;
    f.remaining = spec.bytes;
    f.rate = 0;
    f.since = now;
    f.finish = -1;  // not in finishes_ until Reshare projects it
    f.transfer = transfer;
    ++transfers_[transfer].pending;
    ++active_;
    for (int l : f.links) {
      Link& link = links_[l];
      if (link.flows.empty()) link.busy_since = now;
      link.flows.push_back(id);
      link.bytes += spec.bytes;
      seeds.push_back(l);
    }
  }
  if (transfer < 0) {  // nothing to move: only the latency
    queue_.Schedule(now + latency, std::move(done));
    return;
  }
  Reshare(seeds);
}

void LinkNetwork::Reshare(const std::vector<int>& seeds) {
  const Nanos now = queue_.now();
  ++pass_;
  comp_links_.clear();
  comp_flows_.clear();
  stack_.assign(seeds.begin(), seeds.end());
  while (!stack_.empty()) {  // the connected component: links <-> the flows on them
    const int l = stack_.back();
    stack_.pop_back();
    if (links_[l].mark == pass_) continue;
    links_[l].mark = pass_;
    comp_links_.push_back(l);
    for (int id : links_[l].flows) {
      Flow& f = flows_[id];
      if (f.mark == pass_) continue;
      f.mark = pass_;
      comp_flows_.push_back(id);
      for (int other : f.links) {
        if (links_[other].mark != pass_) stack_.push_back(other);
      }
    }
  }
  for (int id : comp_flows_) {  // bring them up to now at the old rates
    Flow& f = flows_[id];
    f.remaining = std::max(0.0, f.remaining - f.rate * static_cast<double>(now - f.since));
    f.since = now;
    if (f.finish >= 0) finishes_.erase({f.finish, id});
  }
  FillProgressively();
  for (int id : comp_flows_) {
    Flow& f = flows_[id];
    const double ns = f.rate > 0 ? f.remaining / f.rate : 0;
    f.finish = now + std::max<Nanos>(0, std::llround(ns));
    finishes_.insert({f.finish, id});
  }
  for (int l : comp_links_) {
    if (!record_) break;
    double rate = 0;
    for (int id : links_[l].flows) rate += flows_[id].rate;
    const double load = std::min(1.0, rate / links_[l].bandwidth);
    if (load == links_[l].load) continue;
    links_[l].load = load;
    loads_.push_back({l, now, load});
  }
  ScheduleWake();
}

// Max-min fairness by progressive filling: raise every unfrozen flow's rate together until a
// link is full, freeze the flows on it, repeat.
void LinkNetwork::FillProgressively() {
  for (int l : comp_links_) {
    links_[l].left = links_[l].bandwidth;
    links_[l].unfrozen = static_cast<int>(links_[l].flows.size());
  }
  for (int id : comp_flows_) flows_[id].frozen = false;
  std::vector<int>& open = stack_;  // links still holding unfrozen flows
  open.assign(comp_links_.begin(), comp_links_.end());
  int unfrozen = static_cast<int>(comp_flows_.size());
  double level = 0;
  while (unfrozen > 0 && !open.empty()) {
    double step = std::numeric_limits<double>::infinity();
    int tightest = -1;
    for (int l : open) {
      const double share = links_[l].left / links_[l].unfrozen;
      if (share < step) step = share, tightest = l;
    }
    step = std::max(0.0, step);
    level += step;
    for (int l : open) links_[l].left -= step * links_[l].unfrozen;
    for (int l : open) {
      Link& link = links_[l];
      if (link.unfrozen == 0 || (l != tightest && link.left > 1e-9 * link.bandwidth)) continue;
      for (int id : link.flows) {
        Flow& f = flows_[id];
        if (f.frozen) continue;
        f.frozen = true;
        f.rate = level;
        --unfrozen;
        for (int other : f.links) --links_[other].unfrozen;
      }
    }
    open.erase(
        std::remove_if(open.begin(), open.end(), [&](int l) { return links_[l].unfrozen == 0; }),
        open.end());
  }
}

void LinkNetwork::ScheduleWake() {
  if (finishes_.empty()) return;
  const Nanos at = finishes_.begin()->first;
  if (wake_pending_ && wake_at_ <= at) return;  // an earlier wake-up will look again
  wake_pending_ = true;
  wake_at_ = at;
  const uint64_t generation = ++wake_generation_;
  queue_.Schedule(at, [this, generation] { Wake(generation); });
}

void LinkNetwork::EndFlow(int id, std::vector<int>& seeds) {
  Flow& f = flows_[id];
  const Nanos now = queue_.now();
  for (int l : f.links) {
    Link& link = links_[l];
    link.flows.erase(std::find(link.flows.begin(), link.flows.end(), id));
    if (link.flows.empty()) link.busy += now - link.busy_since;
    seeds.push_back(l);
  }
  --active_;
  f.finish = -1;
  free_flows_.push_back(id);
  Transfer& t = transfers_[f.transfer];
  if (--t.pending > 0) return;
  queue_.Schedule(now + t.latency, std::move(t.done));
  t.done = nullptr;
  free_transfers_.push_back(f.transfer);
}

void LinkNetwork::Wake(uint64_t generation) {
  if (generation != wake_generation_) return;  // superseded by an earlier wake-up
  wake_pending_ = false;
  const Nanos now = queue_.now();
  std::vector<int> seeds;
  while (!finishes_.empty() && finishes_.begin()->first <= now) {
    const int id = finishes_.begin()->second;
    finishes_.erase(finishes_.begin());
    EndFlow(id, seeds);
  }
  if (seeds.empty()) {
    ScheduleWake();
  } else {
    Reshare(seeds);
  }
}

}  // namespace twinflow::sim
