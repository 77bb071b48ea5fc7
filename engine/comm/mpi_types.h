#pragma once
// The MPI datatype and reduction of twinflow's dtypes and reduce ops.
#include <mpi.h>

#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"

namespace twinflow::comm {

// MPI_DATATYPE_NULL for a dtype MPI cannot reduce natively (16-bit floats, bool).
MPI_Datatype MpiType(DType dtype);
MPI_Op MpiOp(ReduceOp op);

}  // namespace twinflow::comm
