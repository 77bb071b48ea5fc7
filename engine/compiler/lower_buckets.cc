// Gradient buckets (LowerOptions::bucket_bytes; compiler.md, "Gradient buckets"): the
// data-parallel all-reduces of small gradients gathered per comm group while the ops are
// lowered, then cut into buckets of the cap in the order the backward pass makes them.
#include <algorithm>
#include <numeric>

#include "engine/compiler/lower_internal.h"
#include "engine/plan/memory_overlaps.h"

namespace twinflow::compiler::lowering {
namespace {

// DDP's first bucket (_DEFAULT_FIRST_BUCKET_BYTES): the gradients the backward pass makes first
// start their all-reduce after this much, not after a whole bucket.
constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;

}  // namespace

std::optional<Lowerer::BucketKey> Lowerer::BucketKeyOf(const sbp::BoxingStep& step, int64_t group,
                                                       const std::vector<int64_t>& inputs) const {
  if (bucket_bytes_ <= 0 || step.kind != sbp::BoxingStepKind::kAllReduce ||
      current_pass_ != plan::PASS_OPTIMIZER || !step_ends_exchange_) {
    return std::nullopt;
  }
  for (int64_t regst : inputs) {
    if (!IsGradient(regst)) return std::nullopt;
  }
  const plan::Regst& first = plan_.regsts(inputs[0]);
  if (first.bytes_per_slot() >= bucket_bytes_) return std::nullopt;  // its own all-reduce
  return BucketKey{group, first.tensor().dtype(), static_cast<int>(step.reduce_op), current_stage_,
                   static_cast<int>(current_rate_)};
}

bool Lowerer::IsGradient(int64_t regst) const {
  const plan::Pass pass = plan_.tasks(GradientMaker(regst)).pass();
  return pass == plan::PASS_BACKWARD || pass == plan::PASS_WEIGHT;
}

int64_t Lowerer::GradientMaker(int64_t regst) const {
  const int64_t producer = plan_.regsts(regst).producer();
  const plan::Task& task = plan_.tasks(producer);
  // An ACC of the optimizer's pass sums a gradient of the backward's micro-batches.
  if (task.kind() != plan::ACC) return producer;
  return plan_.regsts(task.consumed_regsts(0)).producer();
}

void Lowerer::JoinBucket(Bucket& bucket, const std::string& name,
                         const std::vector<int64_t>& members, const std::vector<int64_t>& current,
                         const StepOutput& output) {
  bucket.names.push_back(name);
  for (size_t m = 0; m < members.size(); ++m) {
    plan::Task& task = *plan_.mutable_tasks(static_cast<int>(bucket.tasks[m]));
    Consume(task, current[members[m]]);
    output(task, members[m]);
  }
}

std::vector<std::vector<size_t>> Lowerer::CutBucket(const Bucket& bucket) const {
  const std::vector<std::pair<int64_t, int64_t>> pairs =
      plan::DataPairs(plan_, plan_.tasks(static_cast<int>(bucket.tasks[0])));
  std::vector<size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Task ids follow the lowering's topological order, so the backward pass's earlier gradients
  // have the lower ids. Member 0's order is every member's: their tasks stay alike.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return GradientMaker(pairs[a].first) < GradientMaker(pairs[b].first);
  });
  std::vector<std::vector<size_t>> cut;
  int64_t bytes = 0;
  for (const size_t k : order) {
    const int64_t cap =
        cut.size() == 1 ? std::min(kFirstBucketBytes, bucket_bytes_) : bucket_bytes_;
    if (cut.empty() || bytes >= cap) {
      cut.emplace_back();
      bytes = 0;
    }
    cut.back().push_back(k);
    bytes += plan_.regsts(static_cast<int>(pairs[k].first)).bytes_per_slot();
  }
  return cut;
}

void Lowerer::SplitBuckets() {
  int64_t named = 0;  // buckets of several gradients, for their names
  for (const auto& [key, bucket] : buckets_) {
    const std::vector<std::vector<size_t>> cut = CutBucket(bucket);
    std::vector<int64_t> orders{plan_.tasks(static_cast<int>(bucket.tasks[0])).issue_order()};
    while (orders.size() < cut.size()) orders.push_back(next_issue_order_++);
    std::vector<std::string> names;  // by bucket: its all-reduce's name (no "@device")
    for (const std::vector<size_t>& b : cut) {
      names.push_back(b.size() == 1 ? bucket.names[b[0]]
                                    : "gradient_bucket" + std::to_string(named++) + "/all_reduce");
    }
    for (const int64_t first : bucket.tasks) {
      const plan::Task joined = plan_.tasks(static_cast<int>(first));  // a copy: tasks are added
      const std::vector<std::pair<int64_t, int64_t>> pairs = plan::DataPairs(plan_, joined);
      const std::string device = joined.name().substr(joined.name().rfind('@'));
      for (size_t b = 0; b < cut.size(); ++b) {
        plan::Task* task =
            b == 0 ? plan_.mutable_tasks(static_cast<int>(first)) : plan_.add_tasks();
        if (b > 0) {
          *task = joined;
          task->set_id(plan_.tasks_size() - 1);
          task->set_issue_order(orders[b]);
        }
        task->set_name(names[b] + device);
        task->clear_consumed_regsts();
        task->clear_produced_regsts();
        for (const size_t k : cut[b]) {
          const auto [in, out] = pairs[k];
          task->add_consumed_regsts(in);
          task->add_produced_regsts(out);
          plan_.mutable_regsts(static_cast<int>(out))->set_producer(task->id());
          for (int64_t& c : *plan_.mutable_regsts(static_cast<int>(in))->mutable_consumers())
            if (c == first) c = task->id();
        }
      }
    }
  }
}

}  // namespace twinflow::compiler::lowering
