#pragma once
// Chakra execution traces (chakra_et.proto) of a simulated run, so that ASTRA-sim and Chakra's
// tools replay twinflow's Plans: one file per device (ASTRA-sim's <prefix>.<rank>.et, rank the
// device's index), each a GlobalMetadata then its nodes, every message prefixed by its
// varint length; and the communicator groups as ASTRA-sim's comm-group JSON ({"1": [0, 1]}).
//
// Every act of the run is a node: kernels and the runtime's own tasks (ACC, REPEAT, ASSIGN,
// SOURCE, ...) COMP_NODEs timed as simulated; collectives COMM_COLL_NODEs of their group
// (pg_name: group id + 1); SEND/RECV pairs COMM_SEND/RECV_NODEs with a shared tag; a COPY that
// reads another device's register becomes a SEND on that device, a RECV here, and a COMP_NODE
// after the RECV. Dependencies are the run's act graph (sim ActGraphRecorder): data_deps the
// acts whose pieces an act read, ctrl_deps its task's previous act and the pipeline schedule's
// order. All dependencies stay within a file. Deterministic.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"

namespace twinflow::trace {

struct ChakraTrace {
  std::map<int64_t, std::string> files;  // device index -> its .et bytes
  std::string comm_groups_json;
  int64_t nodes = 0;
};

// InvalidArgumentError when the Plan is folded (its other copies have no acts to export).
ChakraTrace ChakraExport(const plan::Plan& plan, const std::vector<plan::ActRecord>& acts);

}  // namespace twinflow::trace
