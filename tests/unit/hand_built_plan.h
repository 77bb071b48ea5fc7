#pragma once
// Hand-built Plans for the ThreadedExecutor tests: a small builder that lays out every slot at
// its own arena offset, direct kernel calls to compare with, seeded feeds, and a two-device
// Plan with a collective and a cross-device copy.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/plan/plan.pb.h"
#include "engine/plan/plan_io.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/cpu/cpu_kernels.h"

namespace twinflow::runtime::hand_plan {

inline plan::RegionDesc ToDesc(const Region& region) {
  plan::RegionDesc desc;
  for (const Range& r : region.ranges) {
    plan::Range* range = desc.add_ranges();
    range->set_begin(r.begin);
    range->set_end(r.end);
  }
  return desc;
}

inline plan::TensorDesc ToDesc(const Shape& shape, plan::DType dtype = plan::DTYPE_F32) {
  plan::TensorDesc desc;
  for (int64_t d : shape.dims()) desc.add_shape(d);
  desc.set_dtype(dtype);
  return desc;
}

inline Region Rows(const Shape& shape, int64_t begin, int64_t end) {
  Region r = Region::Full(shape);
  r.ranges[0] = Range{begin, end};
  return r;
}

inline Region Cols(const Shape& shape, int64_t begin, int64_t end) {
  Region r = Region::Full(shape);
  r.ranges[1] = Range{begin, end};
  return r;
}

// Builds small Plans by hand: every slot gets its own offset in its device's arena.
class PlanBuilder {
 public:
  explicit PlanBuilder(int devices, int64_t pieces_per_step = 1) {
    for (int d = 0; d < devices; ++d) {
      plan::Device* device = plan_.add_devices();
      device->set_id(d);
      device->set_type(plan::DEVICE_CPU);
      device->set_index(d);
    }
    plan_.set_pieces_per_step(pieces_per_step);
  }

  int64_t Task(plan::TaskKind kind, int device, const std::string& name,
               const std::string& op = "") {
    plan::Task* t = plan_.add_tasks();
    t->set_id(plan_.tasks_size() - 1);
    t->set_kind(kind);
    t->set_device(device);
    t->set_name(name);
    t->set_pass(plan::PASS_FORWARD);
    t->mutable_op()->set_type(op);
    return t->id();
  }
  plan::Task& task(int64_t id) { return *plan_.mutable_tasks(static_cast<int>(id)); }

  void Attr(int64_t task_id, const std::string& name, const std::string& s) {
    plan::Attr* a = task(task_id).mutable_op()->add_attrs();
    a->set_name(name);
    a->set_s(s);
  }
  void Attr(int64_t task_id, const std::string& name, int64_t i) {
    plan::Attr* a = task(task_id).mutable_op()->add_attrs();
    a->set_name(name);
    a->set_i(i);
  }

  // A register of `producer`, consumed by `consumers` (each in its op's input order).
  int64_t Regst(int64_t producer, const std::vector<int64_t>& consumers, const Shape& shape,
                int slots = 1, int lag = 0) {
    plan::Regst* r = plan_.add_regsts();
    r->set_id(plan_.regsts_size() - 1);
    r->set_producer(producer);
    std::vector<int64_t> sorted = consumers;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t c : sorted) r->add_consumers(c);
    r->set_slots(slots);
    r->set_lag(lag);
    *r->mutable_tensor() = ToDesc(shape);
    r->set_bytes_per_slot(shape.numel() * 4);
    task(producer).add_produced_regsts(r->id());
    for (int64_t c : consumers) task(c).add_consumed_regsts(r->id());
    return r->id();
  }

  plan::Binding* Binding(google::protobuf::RepeatedPtrField<plan::Binding>* list,
                         const std::string& name, const Shape& logical,
                         plan::ReduceOp reduce = plan::REDUCE_NONE) {
    plan::Binding* b = list->Add();
    b->set_name(name);
    *b->mutable_logical() = ToDesc(logical);
    b->set_reduce(reduce);
    return b;
  }
  plan::Binding* Feed(const std::string& name, const Shape& logical) {
    return Binding(plan_.mutable_feeds(), name, logical);
  }
  plan::Binding* Fetch(const std::string& name, const Shape& logical,
                       plan::ReduceOp reduce = plan::REDUCE_NONE) {
    return Binding(plan_.mutable_fetches(), name, logical, reduce);
  }
  plan::Binding* Variable(const std::string& name, const Shape& logical) {
    return Binding(plan_.mutable_variables(), name, logical);
  }
  static void Part(plan::Binding* b, int64_t regst, const Region& region, bool contributes = true) {
    plan::BindingPart* p = b->add_parts();
    p->set_regst(regst);
    *p->mutable_region() = ToDesc(region);
    p->set_contributes(contributes);
  }

  plan::Plan Build() {
    plan::Plan plan = plan_;
    plan.set_version(plan::kPlanVersion);
    for (plan::Task& t : *plan.mutable_tasks()) {
      if (t.op().type().empty()) continue;
      plan::OpDesc* op = t.mutable_op();
      if (op->inputs_size() == 0) {
        for (int64_t r : t.consumed_regsts()) *op->add_inputs() = plan.regsts(r).tensor();
      }
      if (op->outputs_size() == 0) {
        for (int64_t r : t.produced_regsts()) *op->add_outputs() = plan.regsts(r).tensor();
      }
    }
    for (int d = 0; d < plan.devices_size(); ++d) {
      plan::MemoryPlan* m = plan.add_memory();
      m->set_device(d);
      int64_t offset = 0;
      for (const plan::Regst& r : plan.regsts()) {
        if (plan.tasks(r.producer()).device() != d) continue;
        for (int s = 0; s < r.slots(); ++s) {
          plan::SlotOffset* o = m->add_offsets();
          o->set_regst(r.id());
          o->set_slot(s);
          o->set_offset(offset);
          offset += (r.bytes_per_slot() + 63) / 64 * 64;
        }
      }
      m->set_arena_bytes(offset);
      m->set_peak_bytes(offset);
    }
    return plan;
  }

 private:
  plan::Plan plan_;
};

inline Tensor RunKernel(const std::string& op, std::vector<const Tensor*> inputs,
                        const Shape& out_shape, const Attrs& attrs = {}) {
  static const kernels::KernelRegistry registry = kernels::CpuKernels();
  Tensor out(out_shape, DType::kF32);
  registry.Find({op, DeviceType::kCpu, DType::kF32})(
      kernels::WholeTensorContext(attrs, std::move(inputs), {&out}));
  return out;
}

inline FeedFn RandomFeed(const std::string& name, const Shape& shape,
                         std::atomic<int>* calls = nullptr) {
  return [=](int64_t step) {
    if (calls) ++*calls;
    Rng rng(100 + static_cast<uint64_t>(step));
    return std::map<std::string, Tensor>{{name, Tensor::Random(shape, DType::kF32, rng)}};
  };
}

// Two devices: x split by columns and w by rows give partial products; an all_reduce sums
// them, and a COPY on device 0 assembles rows from both devices' results.
inline plan::Plan TwoDevicePlan() {
  const Shape xs{4, 6}, ws{6, 2}, ys{4, 2};
  PlanBuilder b(2);
  plan::Binding* feed = b.Feed("x", xs);
  plan::Binding* weights = b.Variable("w", ws);
  plan::Binding* partial = b.Fetch("partial", ys, plan::REDUCE_SUM);
  std::vector<int64_t> reduced(2), collective(2);
  for (int d = 0; d < 2; ++d) {
    const std::string at = "@" + std::to_string(d);
    const int64_t src = b.Task(plan::SOURCE, d, "x" + at, "input");
    const int64_t var = b.Task(plan::VARIABLE, d, "w" + at, "variable");
    b.Attr(var, "init", std::string("normal"));
    b.Attr(var, "seed", int64_t{3});
    const Region w_region = Rows(ws, 3 * d, 3 * d + 3);
    *b.task(var).mutable_op()->add_output_regions() = ToDesc(w_region);
    *b.task(var).mutable_op()->add_output_logical() = ToDesc(ws);
    const int64_t mm = b.Task(plan::COMPUTE, d, "matmul" + at, "matmul");
    collective[d] = b.Task(plan::COLLECTIVE, d, "all_reduce" + at);
    plan::CollectiveDesc* c = b.task(collective[d]).mutable_collective();
    c->set_kind(plan::ALL_REDUCE);
    c->set_reduce_op(plan::REDUCE_SUM);
    c->set_group(0);
    c->set_member(d);
    const int64_t psink = b.Task(plan::SINK, d, "partial" + at);
    const int64_t x = b.Regst(src, {mm}, Shape{4, 3}, 2);
    const int64_t w = b.Regst(var, {mm}, Shape{3, 2});
    const int64_t y = b.Regst(mm, {collective[d], psink}, ys);
    PlanBuilder::Part(feed, x, Cols(xs, 3 * d, 3 * d + 3));
    PlanBuilder::Part(weights, w, w_region);
    PlanBuilder::Part(partial, y, Region::Full(ys));
  }
  const int64_t copy = b.Task(plan::COPY, 0, "gather@0");
  const int64_t sink = b.Task(plan::SINK, 0, "z@0");
  for (int d = 0; d < 2; ++d) {
    reduced[d] = b.Regst(collective[d], {copy}, ys);
    plan::Transfer* t = b.task(copy).add_transfers();
    t->set_src_regst(reduced[d]);
    *t->mutable_src_region() = ToDesc(Region::Full(ys));
    *t->mutable_dst_region() = ToDesc(Region::Full(ys));
    *t->mutable_region() = ToDesc(Rows(ys, 2 * d, 2 * d + 2));
  }
  const int64_t z = b.Regst(copy, {sink}, ys);
  PlanBuilder::Part(b.Fetch("z", ys), z, Region::Full(ys));
  plan::Plan plan = b.Build();
  plan::CommGroup* g = plan.add_groups();
  g->set_id(0);
  g->add_devices(0);
  g->add_devices(1);
  return plan;
}

}  // namespace twinflow::runtime::hand_plan
