"""Module and Parameter: the torch.nn shape, with OneFlow's global-layout and stage hints."""
import numpy as np

from .. import _C
from ..lazy import current_trace
from ..tensor import dtype_name


class Parameter:
    """A model weight. Its value lives where it was last updated (a graph's runner, or here
    as numpy); ``numpy()`` fetches it and ``copy_()`` replaces it."""

    def __init__(self, shape, init, dtype="f32"):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self._init = init      # () -> numpy array, drawn only when the value is first needed
        self._value = None     # numpy, when this side holds the latest value
        self._home = None      # the runner holding the latest value, if any
        self._home_name = None
        self._version = 0      # bumped whenever the value changes
        self._name = None      # the variable name, from the first graph that names it
        self._sbp = None       # a pinned layout (to_global)
        self.role = None       # Megatron role set by layers: "column", "row", "vocab"

    def numpy(self):
        """The current value (a collective call under mpirun: every rank asks in turn)."""
        if self._home is not None and self._value is None:
            self._value = self._home.variable(self._home_name)
        if self._value is None:
            self._value = np.asarray(self._init(), dtype=np.float32 if self.dtype == "f32" else None)
        return self._value.copy()

    def copy_(self, value):
        value = np.asarray(value)
        if value.shape != self.shape:
            raise _C.ShapeError(f"parameter of shape {list(self.shape)} given a value of shape "
                                f"{list(value.shape)}")
        dtype_name(value.dtype)
        self._value = value.astype(np.float32).copy()
        self._home = None
        self._version += 1
        return self

    def to_global(self, placement=None, sbp=None):
        self._sbp = sbp
        return self

    def _moved_to(self, runner, name):
        """The latest value is now in `runner` (a step updated it there)."""
        self._home, self._home_name, self._value = runner, name, None
        self._version += 1

    def __repr__(self):
        return f"Parameter(shape={list(self.shape)}, dtype={self.dtype})"


class Module:
    """Subclass and define ``forward``; parameters and submodules are found by attribute."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_stage", None)
        object.__setattr__(self, "_recompute", False)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise _C.InvalidArgumentError(
                f"{type(self).__name__}: call super().__init__() before setting attributes")
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        trace = current_trace(type(self).__name__)
        if self._stage is not None:
            trace.set_stage(*self._stage)
        if not self._recompute:
            return self.forward(*args, **kwargs)
        with trace.recomputed():
            return self.forward(*args, **kwargs)

    def recompute(self, enabled=True):
        """Activation recomputation (checkpointing) for this module when training: its forward
        ops run again in the backward pass instead of keeping their results, so only the
        module's inputs stay in memory between the passes. Gradients are unchanged. A
        recomputed module inside another is part of the outer one's recomputation."""
        object.__setattr__(self, "_recompute", bool(enabled))
        return self

    def named_parameters(self, prefix=""):
        seen = set()
        for name, p in self._parameters.items():
            if id(p) not in seen:
                seen.add(id(p))
                yield prefix + name, p
        for name, m in self._modules.items():
            for sub, p in m.named_parameters(prefix + name + "."):
                if id(p) not in seen:
                    seen.add(id(p))
                    yield sub, p

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def children(self):
        return list(self._modules.values())

    def modules(self):
        yield self
        for m in self._modules.values():
            yield from m.modules()

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def to_global(self, placement=None, sbp=None):
        """Pins the layout of this module's own parameters (each needs one Sbp per axis of
        the placement its ops run on). Layers with a bias derive the bias's layout."""
        for p in self._parameters.values():
            p.to_global(placement, sbp)
        return self

    def set_stage(self, stage, placement=None):
        """Runs this module (and what follows it in build()) as pipeline stage `stage`: on
        `placement`, or the strategy's placement for that stage."""
        if not isinstance(stage, int) or stage < 0:
            raise _C.InvalidArgumentError(f"set_stage: stage must be a non-negative int, got {stage!r}")
        object.__setattr__(self, "_stage", (stage, placement))
        return self

    def state_dict(self):
        return {name: p.numpy() for name, p in self.named_parameters()}

    def load_state_dict(self, state):
        params = dict(self.named_parameters())
        missing = sorted(set(params) - set(state))
        unknown = sorted(set(state) - set(params))
        if missing or unknown:
            raise _C.InvalidArgumentError(f"load_state_dict: missing {missing}, unexpected {unknown}")
        for name, p in params.items():
            p.copy_(state[name])


class Sequential(Module):
    def __init__(self, *layers):
        super().__init__()
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise _C.InvalidArgumentError(f"Sequential: item {i} is not a tw.nn.Module")
            setattr(self, str(i), layer)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def forward(self, x):
        for layer in self._modules.values():
            x = layer(x)
        return x


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module):
        setattr(self, str(len(self._modules)), module)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)
