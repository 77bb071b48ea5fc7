#pragma once
// Gathering the values SINK tasks handed to the host on each rank, so that every rank holds
// all of them after a run (the transports' ExchangeSinks).
#include "engine/plan/plan.pb.h"
#include "engine/runtime/transport.h"

namespace twinflow::comm {

// Every rank's `local` values, merged, on every rank (collective over MPI_COMM_WORLD, between
// runs); CommError when a rank's values do not fit the Plan's registers.
runtime::SinkValues ExchangeSinkValues(const plan::Plan& plan, const runtime::SinkValues& local);

}  // namespace twinflow::comm
