// The polling MPI comm threads of a CPU host (simulator/comm_polling, CoreSharing::Poll).
#include "simulator/comm_polling.h"

#include <gtest/gtest.h>

#include "simulator/core_sharing.h"
#include "simulator/des/event_queue.h"

namespace twinflow::sim {
namespace {

void RunAll(EventQueue& queue) {
  while (queue.RunNext()) {
  }
}

// One core, a working thread and a polling one: the worker gets 2/3 of the core, so 1 ms of
// work ends at 1.5 ms; the poller has done 0.5 ms of its 1 ms by then and ends alone at 2 ms.
TEST(CoreSharing, APollerGetsHalfAWorkersShare) {
  EventQueue queue;
  CoreSharing cores(queue, /*nodes=*/1, /*cores_per_node=*/1, /*threads=*/2);
  Nanos work_end = -1, poll_end = -1;
  cores.Run(0, 0, 1e-3, [&] { work_end = queue.now(); });
  cores.Poll(0, 1, 1e-3, [&] { poll_end = queue.now(); });
  RunAll(queue);
  EXPECT_NEAR(static_cast<double>(work_end), 1.5e6, 2);
  EXPECT_NEAR(static_cast<double>(poll_end), 2.0e6, 2);
}

// Contention: with two cores, work started beside one other worker has every core working
// (1); beside a worker and two pollers it runs at 2/3 of a core, and so does the other
// worker, which fills 2/3 of the second core.
TEST(CoreSharing, PollersMakeContentionPartial) {
  EventQueue queue;
  CoreSharing cores(queue, /*nodes=*/1, /*cores_per_node=*/2, /*threads=*/4);
  EXPECT_DOUBLE_EQ(cores.Contention(0), 0);
  cores.Run(0, 0, 1e-3, [] {});
  EXPECT_DOUBLE_EQ(cores.Contention(0), 1);
  cores.Poll(0, 2, 1e-3, [] {});
  cores.Poll(0, 3, 1e-3, [] {});
  EXPECT_NEAR(cores.Contention(0), 2.0 / 3, 1e-12);
  RunAll(queue);
  EXPECT_DOUBLE_EQ(cores.Contention(0), 0);
}

// A rank's comm thread polls from the post of an operation between ranks until it completes:
// the worker beside it on the one core runs at 2/3 speed meanwhile and at full speed after.
TEST(CommPolling, PollsWhileAnOperationIsInFlight) {
  EventQueue queue;
  CoreSharing cores(queue, /*nodes=*/1, /*cores_per_node=*/1, /*threads=*/2);
  CommPolling polling(cores, /*node_of_rank=*/{0}, /*first_thread=*/1);
  Nanos first = -1, second = -1;
  polling.Post(0);
  EXPECT_EQ(polling.in_flight(0), 1);
  cores.Run(0, 0, 1e-3, [&] {
    first = queue.now();
    polling.Complete(0);
    cores.Run(0, 0, 1e-3, [&] { second = queue.now(); });
  });
  RunAll(queue);
  EXPECT_NEAR(static_cast<double>(first), 1.5e6, 2);
  EXPECT_EQ(polling.in_flight(0), 0);
  // After the completion only the slice under way competes (at most 50 us of core, 150 us of
  // wall time at a third): the second millisecond of work takes under 1.1 ms.
  EXPECT_GT(second - first, 1'000'000);
  EXPECT_LT(second - first, 1'100'000);
}

// While the comm thread copies for an operation it does not poll: no slices, the worker gets
// the core to itself.
TEST(CommPolling, PausesWhileTheCommThreadCopies) {
  EventQueue queue;
  CoreSharing cores(queue, /*nodes=*/1, /*cores_per_node=*/1, /*threads=*/2);
  CommPolling polling(cores, /*node_of_rank=*/{0}, /*first_thread=*/1);
  Nanos end = -1;
  polling.BeginCopy(0);
  polling.Post(0);
  cores.Run(0, 0, 1e-3, [&] { end = queue.now(); });
  RunAll(queue);
  EXPECT_NEAR(static_cast<double>(end), 1e6, 2);
}

}  // namespace
}  // namespace twinflow::sim
