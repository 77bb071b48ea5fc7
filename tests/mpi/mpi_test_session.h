#pragma once
// The MPI session of the tests under mpirun (tests/mpi): main starts it before any test runs
// and ends it after all of them, so every test may use MPI_COMM_WORLD.
#include "engine/comm/mpi_session.h"

namespace twinflow::testing {

const comm::MpiSession& Session();

}  // namespace twinflow::testing
