// The tests under mpirun (mpirun -np 2 mpi_tests): one MPI session for all of them; every rank
// runs every test, only rank 0 prints, and the job fails when any rank's test failed.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/mpi/mpi_test_session.h"

namespace twinflow::testing {
namespace {
std::unique_ptr<comm::MpiSession> session;  // from main's start to its end
}  // namespace

const comm::MpiSession& Session() { return *session; }

}  // namespace twinflow::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  twinflow::testing::session = std::make_unique<twinflow::comm::MpiSession>("mpi_tests");
  if (twinflow::testing::session->rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  bool any = false;
  for (const std::string& v : twinflow::comm::AllgatherText(failed ? "1" : "0")) any |= v != "0";
  twinflow::testing::session.reset();
  return any ? 1 : 0;
}
