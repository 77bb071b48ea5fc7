// All-reduce bus bandwidth under mpirun: raw MPI_Allreduce against twinflow's collective path
// (MpiTransport::Collective: handed over by a device thread, issued by the comm thread as
// MPI_Iallreduce and polled, completion reported back), on 8 and 64 MiB of f32.
//
//   mpirun -np 2 build/bin/bench_allreduce [iterations]
//
// Not a Google Benchmark binary: every rank must run the same iterations in lock step, and only
// rank 0 reports. Bus bandwidth is 2 (p - 1) / p x bytes / time, the usual convention, so that
// it compares across rank counts. Each figure is the best of three rounds of `iterations`
// back-to-back calls.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "engine/comm/mpi_session.h"
#include "engine/comm/mpi_transport.h"

namespace twinflow {
namespace {

// One all_reduce over every rank, one device each: just what MpiTransport reads.
plan::Plan AllReducePlan(int ranks) {
  plan::Plan plan;
  plan::CommGroup* group = plan.add_groups();
  for (int r = 0; r < ranks; ++r) {
    plan::Device* d = plan.add_devices();
    d->set_id(r);
    d->set_type(plan::DEVICE_CPU);
    d->set_index(r);
    d->set_rank(r);
    group->add_devices(r);
    plan::Task* t = plan.add_tasks();
    t->set_id(r);
    t->set_kind(plan::COLLECTIVE);
    t->set_device(r);
    t->set_name("all_reduce@" + std::to_string(r));
    t->mutable_collective()->set_kind(plan::ALL_REDUCE);
    t->mutable_collective()->set_reduce_op(plan::REDUCE_SUM);
    t->mutable_collective()->set_member(r);
  }
  return plan;
}

// Seconds per call of `iterations` back-to-back calls of `fn`, the best of three rounds (after
// one untimed call), as the slowest rank saw it. `begin` and `end` bracket each round untimed.
template <typename Fn, typename Begin, typename End>
double SecondsPerCall(int iterations, Begin begin, Fn fn, End end) {
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    begin();
    fn();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) fn();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    end();
    best = std::min(best, seconds / iterations);
  }
  MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return best;
}

int Main(int argc, char** argv) {
  comm::MpiSession mpi("allreduce_bench");
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const int p = mpi.size();
  const plan::Plan plan = AllReducePlan(p);
  comm::MpiTransport transport(plan, mpi);
  if (mpi.rank() == 0) {
    std::printf("all-reduce bus bandwidth, %d ranks, f32 sum, best of 3 x %d calls\n", p,
                iterations);
    std::printf("%8s  %14s  %14s  %6s\n", "MiB", "MPI GB/s", "twinflow GB/s", "ratio");
  }
  for (const int mib : {8, 64}) {
    const int64_t count = int64_t{mib} << 18;  // f32 elements
    Tensor in(Shape{count}, DType::kF32);
    std::fill_n(in.data<float>(), count, 1.0f);
    Tensor out(Shape{count}, DType::kF32);
    const auto nothing = [] {};
    const double raw = SecondsPerCall(
        iterations, nothing,
        [&] {
          MPI_Allreduce(in.raw(), out.raw(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        },
        nothing);
    // While the comm thread runs it owns MPI (MPI_THREAD_SERIALIZED), so it runs for a whole
    // round; each call hands it the collective and waits for the completion callback, as a
    // device thread's act would.
    std::mutex mutex;
    std::condition_variable cv;
    const double ours = SecondsPerCall(
        iterations,
        [&] { transport.Begin([](std::exception_ptr e) { std::rethrow_exception(e); }); },
        [&] {
          bool done = false;
          std::vector<runtime::CollectiveMember> local;
          local.push_back(
              runtime::CollectiveMember::Of(mpi.rank(), 0, mpi.rank(), in.AsView(), out.AsView()));
          transport.Collective(plan.tasks(mpi.rank()), 0, std::move(local), [&] {
            std::lock_guard<std::mutex> lock(mutex);
            done = true;
            cv.notify_all();
          });
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return done; });
        },
        [&] { transport.End(); });
    if (out.GetDouble(0) != p)
      std::fprintf(stderr, "wrong all-reduce result %g\n", out.GetDouble(0));
    const double bytes = static_cast<double>(count) * 4;
    const double factor = 2.0 * (p - 1) / p;
    if (mpi.rank() == 0) {
      std::printf("%8d  %14.2f  %14.2f  %6.3f\n", mib, factor * bytes / raw / 1e9,
                  factor * bytes / ours / 1e9, raw / ours);
    }
  }
  return 0;
}

}  // namespace
}  // namespace twinflow

int main(int argc, char** argv) { return twinflow::Main(argc, argv); }
