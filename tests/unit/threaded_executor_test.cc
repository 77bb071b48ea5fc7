// ThreadedExecutor on hand-built Plans: results equal direct kernel calls, variables loop
// across steps through ASSIGN, devices meet in collectives and copy from each other, arenas
// hold every live slot, and failures (a kernel error, a deadlock) end the run with the task or
// actor named instead of hanging.
#include "engine/runtime/threaded_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "kernels/cpu/cpu_kernels.h"

namespace twinflow::runtime {
namespace {

plan::RegionDesc ToDesc(const Region& region) {
  plan::RegionDesc desc;
  for (const Range& r : region.ranges) {
    plan::Range* range = desc.add_ranges();
    range->set_begin(r.begin);
    range->set_end(r.end);
  }
  return desc;
}

plan::TensorDesc ToDesc(const Shape& shape, const std::string& dtype = "f32") {
  plan::TensorDesc desc;
  for (int64_t d : shape.dims()) desc.add_shape(d);
  desc.set_dtype(dtype);
  return desc;
}

Region Rows(const Shape& shape, int64_t begin, int64_t end) {
  Region r = Region::Full(shape);
  r.ranges[0] = Range{begin, end};
  return r;
}

Region Cols(const Shape& shape, int64_t begin, int64_t end) {
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
      device->set_type("cpu");
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
                         const std::string& reduce = "") {
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
                       const std::string& reduce = "") {
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

Tensor RunKernel(const std::string& op, std::vector<const Tensor*> inputs, const Shape& out_shape,
                 const Attrs& attrs = {}) {
  static const kernels::KernelRegistry registry = kernels::CpuKernels();
  Tensor out(out_shape, DType::kF32);
  registry.Find({op, DeviceType::kCpu, DType::kF32})(
      kernels::WholeTensorContext(attrs, std::move(inputs), {&out}));
  return out;
}

FeedFn RandomFeed(const std::string& name, const Shape& shape, std::atomic<int>* calls = nullptr) {
  return [=](int64_t step) {
    if (calls) ++*calls;
    Rng rng(100 + static_cast<uint64_t>(step));
    return std::map<std::string, Tensor>{{name, Tensor::Random(shape, DType::kF32, rng)}};
  };
}

TEST(TensorView, WritesThroughAndCopiesOwn) {
  std::vector<float> memory(6, 0.0f);
  Tensor view = Tensor::View(Shape{2, 3}, DType::kF32, reinterpret_cast<std::byte*>(memory.data()));
  EXPECT_TRUE(view.is_view());
  EXPECT_EQ(view.nbytes(), 24);
  view.Fill(2.0);
  EXPECT_EQ(memory[5], 2.0f);
  Tensor copy = view;  // an owning copy: writing it leaves the viewed memory alone
  EXPECT_FALSE(copy.is_view());
  copy.Fill(3.0);
  EXPECT_EQ(memory[0], 2.0f);
  Tensor moved = std::move(view);  // moving keeps the view
  moved.SetDouble(0, 5.0);
  EXPECT_EQ(memory[0], 5.0f);
  EXPECT_THROW(Tensor::View(Shape{1}, DType::kF32, nullptr), InvalidArgumentError);
}

// x -> matmul(x, w) -> relu -> y on one device over 3 steps.
TEST(ThreadedExecutor, ChainEqualsDirectKernelCalls) {
  const Shape xs{4, 3}, ws{3, 2}, ys{4, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t var = b.Task(plan::VARIABLE, 0, "w@0", "variable");
  b.Attr(var, "init", std::string("normal"));
  b.Attr(var, "seed", int64_t{7});
  const int64_t mm = b.Task(plan::COMPUTE, 0, "matmul@0", "matmul");
  const int64_t relu = b.Task(plan::COMPUTE, 0, "relu@0", "relu");
  const int64_t sink = b.Task(plan::SINK, 0, "y@0");
  const int64_t x = b.Regst(src, {mm}, xs, 2);
  const int64_t w = b.Regst(var, {mm}, ws);
  const int64_t h = b.Regst(mm, {relu}, ys, 2);
  const int64_t y = b.Regst(relu, {sink}, ys);
  PlanBuilder::Part(b.Feed("x", xs), x, Region::Full(xs));
  PlanBuilder::Part(b.Fetch("y", ys), y, Region::Full(ys));
  PlanBuilder::Part(b.Variable("w", ws), w, Region::Full(ws));
  const plan::Plan plan = b.Build();

  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  std::atomic<int> calls{0};
  const RunResult result = exec.Run(RandomFeed("x", xs, &calls), RunOptions{3, 10});
  EXPECT_EQ(calls.load(), 3);  // once per step
  ASSERT_EQ(result.fetches.size(), 3u);

  const Tensor weight = RunKernel("variable", {}, ws, Attrs{{"init", std::string("normal")},
                                                            {"seed", int64_t{7}}});
  EXPECT_TRUE(BitEqual(exec.Variable("w"), weight));
  for (int64_t step = 0; step < 3; ++step) {
    const Tensor input = RandomFeed("x", xs)(step).at("x");
    const Tensor product = RunKernel("matmul", {&input, &weight}, ys);
    const Tensor expected = RunKernel("relu", {&product}, ys);
    EXPECT_TRUE(BitEqual(result.fetches[step].at("y"), expected)) << "step " << step;
  }
  ASSERT_EQ(result.peak_arena_bytes.size(), 1u);
  EXPECT_GT(result.peak_arena_bytes[0], 0);
  EXPECT_LE(result.peak_arena_bytes[0], plan.memory(0).arena_bytes());
}

// v += x every step: add reads the variable, ASSIGN writes the sum back in place.
TEST(ThreadedExecutor, AssignCarriesVariablesAcrossSteps) {
  const Shape s{2, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t var = b.Task(plan::VARIABLE, 0, "v@0", "variable");
  const int64_t add = b.Task(plan::COMPUTE, 0, "add@0", "add");
  const int64_t assign = b.Task(plan::ASSIGN, 0, "assign@0");
  const int64_t sink = b.Task(plan::SINK, 0, "sum@0");
  const int64_t v = b.Regst(var, {add, assign}, s);
  const int64_t x = b.Regst(src, {add}, s);
  const int64_t sum = b.Regst(add, {assign, sink}, s);
  PlanBuilder::Part(b.Feed("x", s), x, Region::Full(s));
  PlanBuilder::Part(b.Fetch("sum", s), sum, Region::Full(s));
  PlanBuilder::Part(b.Variable("v", s), v, Region::Full(s));
  const plan::Plan plan = b.Build();

  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  const FeedFn feed = RandomFeed("x", s);
  const RunResult first = exec.Run(feed, RunOptions{3, 10});
  Tensor expected(s, DType::kF32);
  for (int64_t step = 0; step < 3; ++step) {
    const Tensor in = feed(step).at("x");
    expected = RunKernel("add", {&expected, &in}, s);
    EXPECT_TRUE(BitEqual(first.fetches[step].at("sum"), expected)) << "step " << step;
  }
  EXPECT_TRUE(BitEqual(exec.Variable("v"), expected));

  // Variables keep their values across runs, and SetVariable replaces them.
  Tensor start(s, DType::kF32);
  start.Fill(10.0);
  exec.SetVariable("v", start);
  const RunResult second = exec.Run(feed, RunOptions{1, 10});
  const Tensor in0 = feed(0).at("x");
  EXPECT_TRUE(BitEqual(second.fetches[0].at("sum"), RunKernel("add", {&start, &in0}, s)));
  EXPECT_THROW(exec.SetVariable("v", Tensor(Shape{3}, DType::kF32)), ShapeError);
  EXPECT_THROW(exec.Variable("nope"), InvalidArgumentError);
}

// Two devices: x split by columns and w by rows give partial products; an all_reduce sums
// them, and a COPY on device 0 assembles rows from both devices' results.
plan::Plan TwoDevicePlan() {
  const Shape xs{4, 6}, ws{6, 2}, ys{4, 2};
  PlanBuilder b(2);
  plan::Binding* feed = b.Feed("x", xs);
  plan::Binding* weights = b.Variable("w", ws);
  plan::Binding* partial = b.Fetch("partial", ys, "sum");
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
    c->set_kind("all_reduce");
    c->set_reduce_op("sum");
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

TEST(ThreadedExecutor, CollectiveAndCopyAcrossDevices) {
  const plan::Plan plan = TwoDevicePlan();
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  const Shape xs{4, 6}, ws{6, 2}, ys{4, 2};
  const FeedFn feed = RandomFeed("x", xs);
  const RunResult result = exec.Run(feed, RunOptions{2, 10});

  // Each device initialised its rows of the logical weight: together the whole-tensor value.
  const Tensor weight = RunKernel("variable", {}, ws, Attrs{{"init", std::string("normal")},
                                                            {"seed", int64_t{3}}});
  EXPECT_TRUE(BitEqual(exec.Variable("w"), weight));
  for (int64_t step = 0; step < 2; ++step) {
    const Tensor input = feed(step).at("x");
    const Tensor expected = RunKernel("matmul", {&input, &weight}, ys);
    EXPECT_LE(CloseRatio(result.fetches[step].at("z"), expected, 1e-5, 1e-6), 1.0);
    EXPECT_TRUE(BitEqual(result.fetches[step].at("z"), result.fetches[step].at("partial")));
  }
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_GT(result.peak_arena_bytes[d], 0);
    EXPECT_LE(result.peak_arena_bytes[d], plan.memory(static_cast<int>(d)).arena_bytes());
  }
  // Thread timing never changes a bit of the result.
  ThreadedExecutor again(plan, registry);
  const RunResult repeat = again.Run(feed, RunOptions{2, 10});
  for (int64_t step = 0; step < 2; ++step) {
    EXPECT_TRUE(BitEqual(repeat.fetches[step].at("z"), result.fetches[step].at("z")));
  }
}

TEST(ThreadedExecutor, KernelErrorNamesTheTask) {
  const Shape s{2, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t bad = b.Task(plan::COMPUTE, 0, "layer/dropout@0", "dropout");  // no "rate"
  const int64_t sink = b.Task(plan::SINK, 0, "y@0");
  const int64_t x = b.Regst(src, {bad}, s);
  const int64_t y = b.Regst(bad, {sink}, s);
  PlanBuilder::Part(b.Feed("x", s), x, Region::Full(s));
  PlanBuilder::Part(b.Fetch("y", s), y, Region::Full(s));
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(b.Build(), registry);
  try {
    exec.Run(RandomFeed("x", s), RunOptions{2, 10});
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("layer/dropout@0"), std::string::npos) << e.what();
  }
  // A missing feed is reported too, and the executor can run again afterwards.
  EXPECT_THROW(exec.Run([](int64_t) { return std::map<std::string, Tensor>{}; }, RunOptions{1, 10}),
               InvalidArgumentError);
}

TEST(ThreadedExecutor, PlansThatDoNotFitAreRejected) {
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  plan::Plan cuda = TwoDevicePlan();
  cuda.mutable_devices(1)->set_type("cuda");
  EXPECT_THROW(ThreadedExecutor(cuda, registry), PlanError);
  plan::Plan small = TwoDevicePlan();
  small.mutable_memory(0)->set_arena_bytes(8);
  EXPECT_THROW(ThreadedExecutor(small, registry), PlanError);
  plan::Plan unknown = TwoDevicePlan();
  unknown.mutable_tasks(2)->mutable_op()->set_type("no_such_op");
  try {
    ThreadedExecutor exec(unknown, registry);
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_op"), std::string::npos) << e.what();
  }
}

// data feeds join directly and through a register with lag 1 and one slot: join keeps piece 0
// of the lagged register until its act 1, which needs data's piece 1, which needs that slot.
TEST(ThreadedExecutor, DeadlockFailsWithTimeoutNamingTheActors) {
  const Shape s{2};
  PlanBuilder b(1);
  const int64_t data = b.Task(plan::SOURCE, 0, "data@0", "input");
  const int64_t join = b.Task(plan::COMPUTE, 0, "join@0", "add");
  const int64_t sink = b.Task(plan::SINK, 0, "out@0");
  const int64_t direct = b.Regst(data, {join}, s);
  b.Regst(data, {join}, s, 1, 1);
  const int64_t out = b.Regst(join, {sink}, s);
  PlanBuilder::Part(b.Feed("x", s), direct, Region::Full(s));
  PlanBuilder::Part(b.Fetch("out", s), out, Region::Full(s));
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(b.Build(), registry);
  const auto start = std::chrono::steady_clock::now();
  try {
    exec.Run(RandomFeed("x", s), RunOptions{3, 0.5});
    FAIL() << "expected a timeout";
  } catch (const TimeoutError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("data@0"), std::string::npos) << message;
    EXPECT_NE(message.find("join@0"), std::string::npos) << message;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.5);
}

}  // namespace
}  // namespace twinflow::runtime
