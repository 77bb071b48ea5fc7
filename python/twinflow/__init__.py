"""twinflow: compile once, run real or simulated.

A model is written for one logical device with tw.nn modules inside a tw.Graph's build();
placements and SBP layouts (split, broadcast, partial-sum) say how it is distributed, by hand
(`to_global`, `set_stage`) or through a strategy string ("dp=2,tp=2,pp=2,mb=4"). The graph
compiles to one actor Plan, which `step()` runs on this process's CPU devices (and across the
ranks of `mpirun`), and `simulate()` times on a modelled cluster.

    import twinflow as tw
"""
from . import _C
from ._C import (CommError, DeviceError, InvalidArgumentError, NumericsError, OutOfMemoryError,
                 PlanError, SbpError, ShapeError, TimeoutError)
from .placement import placement
from . import sbp
from .tensor import Tensor, TensorSpec, tensor, from_numpy
from .random import manual_seed
from . import nn, optim, distributed, models
from .graph import Graph
from .tune import tune, TuneReport

__all__ = [
    "placement", "sbp", "Tensor", "TensorSpec", "tensor", "from_numpy", "manual_seed", "nn",
    "optim", "distributed", "models", "Graph", "InvalidArgumentError", "ShapeError", "SbpError",
    "PlanError", "CommError", "TimeoutError", "OutOfMemoryError", "DeviceError", "NumericsError",
    "tune",
    "TuneReport",
]
