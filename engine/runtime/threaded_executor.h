#pragma once
// ThreadedExecutor: runs a Plan for real on the CPU devices of this process. One thread per
// device owns that device's actors (engine/runtime/actor.h) and a message queue; kernels run
// synchronously on it with one BLAS thread. Registers live in one arena per device, allocated
// exactly as the Plan's memory plan says. Copies between devices of the process read the other
// device's slot directly; collectives meet at an in-process rendezvous that never blocks a
// device thread (the last member to arrive computes, then every member's Done is posted). A
// watchdog fails the run with TimeoutError naming the waiting actors and registers when no act
// completes for `watchdog_seconds`.
//
// Task conventions (what the compiler emits, engine/compiler/lower.h):
//   SOURCE      op "input"; each act copies the feed's slice for that piece into its slot
//   VARIABLE    op "variable"; its kernel initialises the slot once, at start; acts are no-ops
//               (the slot keeps the state, which ASSIGN updates in place)
//   COMPUTE     op.type's CPU kernel on the slots, with op's regions and logical shapes
//   COPY        zero-fills its output slot, then copies each Transfer's region from the slot of
//               the consumed register `src_regst` (any device of this process)
//   COLLECTIVE  all_reduce / all_gather / reduce_scatter / all_to_all over the members' input
//               slots, written to each member's output slot (semantics of
//               engine/sbp/collective_reference.h, reimplemented on raw slots or reused via
//               Tensors)
//   ACC         first act copies its input into the output, later acts add; REPEAT copies
//   SINK        copies its slot to the host for the fetch binding that names its register
//   ASSIGN      copies input 1 into the slot of input 0 (a VARIABLE's register), in place
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/device.h"
#include "engine/runtime/feed_spec.h"
#include "engine/runtime/transport.h"
#include "kernels/kernel.h"

namespace twinflow::runtime {

// How long a stalled run waits for the other ranks to answer a liveness probe.
inline constexpr double kLivenessProbeSeconds = 2;

struct RunOptions {
  int64_t steps = 1;
  double watchdog_seconds = 60;
  bool trace = false;  // record every act's span (RunResult::trace)
  // After every COMPUTE act, scan its floating outputs and stop the run at the first NaN or
  // infinity with a NumericsError naming the op, the task, the element and the piece (a
  // debugging mode: it reads every output once more, and downloads it from an accelerator).
  bool check_finite = false;
  // What the FeedFn gives each feed (feed_spec.h): this rank's rows (kLocal) or the whole
  // batch (kGlobal). One rank holding every device: the same.
  FeedMode feed = FeedMode::kLocal;
};

// Every feed binding's value for one step, as RunOptions::feed says (FeedSpecs).
using FeedFn = std::function<std::map<std::string, Tensor>(int64_t step)>;

struct RunResult {
  // fetches[step][binding name]: the logical value, assembled from the parts (reduced when the
  // binding is partial).
  std::vector<std::map<std::string, Tensor>> fetches;
  std::vector<int64_t> peak_arena_bytes;  // per device: the most bytes of live slots seen
  std::vector<int64_t> arena_high_water;  // per device: the highest byte a live slot reached
  // With RunOptions::trace, this rank's acts: compute acts on stream 0 from launch to end,
  // SEND, RECV and COLLECTIVE on stream 1 from launch to completion; steady-clock nanoseconds
  // (one clock for every process of a host).
  std::vector<plan::TraceSpan> trace;
  double seconds = 0;
};

// Move-only. The executor keeps its own copy of the Plan and its state (arenas, variables) in
// one heap Impl; Run's device threads reference that Impl, never the executor object, and are
// joined before Run returns, so moving an executor that is not running is safe. Copies are
// deleted: two executors sharing one set of arenas would run over each other's slots.
// Makes the Device of one Plan device at its place (engine/runtime/device.h).
using DeviceFactory =
    std::function<std::unique_ptr<Device>(const plan::Device&, const DevicePlace&)>;

class ThreadedExecutor {
 public:
  // Validates the plan; throws PlanError when it does not fit this process (a device of
  // another rank, a cuda device) or lacks a kernel (InvalidArgumentError naming the op).
  // With a transport (engine/comm), this rank runs the tasks of its own devices and reaches the
  // others through it; without one, every device must be on one rank. `plan` and `kernels` are
  // copied (the caller may drop them); `transport` must outlive the executor. `make_device`
  // gives each local device its Device (MakeDevice; tests pass others).
  ThreadedExecutor(const plan::Plan& plan, const kernels::KernelRegistry& kernels,
                   Transport* transport = nullptr, const DeviceFactory& make_device = MakeDevice);
  ~ThreadedExecutor();
  ThreadedExecutor(ThreadedExecutor&&) noexcept;
  ThreadedExecutor& operator=(ThreadedExecutor&&) noexcept;
  ThreadedExecutor(const ThreadedExecutor&) = delete;
  ThreadedExecutor& operator=(const ThreadedExecutor&) = delete;

  // Runs `options.steps` steps; variables keep their values across Run calls. A fed value of
  // the wrong shape or dtype for its mode is a ShapeError naming the feed, the shape given and
  // the shape expected.
  RunResult Run(const FeedFn& feeds, const RunOptions& options);

  // What this rank passes for each feed (plan order) in `mode`: its shape and rows.
  // InvalidArgumentError when `mode` is kLocal and a feed's parts on this rank are not one
  // block of whole rows (that feed needs kGlobal).
  std::vector<FeedSpec> FeedSpecs(FeedMode mode) const;

  // A variable binding's logical value (assembled), by name. With a transport, every rank must
  // ask for the same variables in the same order (the parts are gathered). SetVariable writes
  // this rank's parts.
  Tensor Variable(const std::string& name) const;
  void SetVariable(const std::string& name, const Tensor& value);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinflow::runtime
