"""The seed parameters and dropout masks are drawn from: explicit, so runs repeat."""
import numpy as np

_state = {"seed": 0, "count": 0}


def manual_seed(seed):
    """Parameters created after this call draw their initial values from `seed` (and their
    order of creation), so the same script gives the same model."""
    _state["seed"] = int(seed)
    _state["count"] = 0


def next_generator():
    """A generator of its own for the next parameter or dropout layer."""
    _state["count"] += 1
    return np.random.default_rng([_state["seed"], _state["count"]])


def next_seed():
    return int(next_generator().integers(0, 2**31 - 1))
