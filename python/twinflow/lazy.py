"""Symbolic tensors: what a tw.Graph's build() sees. Each operation adds an op to the graph
being traced (the engine checks it at once, so errors name the op), and nothing runs until
the graph is compiled and stepped."""
import contextlib
import itertools
import math

from . import _C
from . import sbp as sbp_module

_current = []  # the trace being built (a stack; one graph traces at a time)
_unnamed = itertools.count()  # names for parameters no graph attribute reaches


def current_trace(what):
    if not _current:
        raise _C.InvalidArgumentError(
            f"{what}: modules run only inside a tw.Graph's build() (call the graph, not the module)")
    return _current[-1]


class Trace:
    """One build() in progress: the engine's GraphBuilder, the strategy's layout rules and
    the parameters met so far."""

    def __init__(self, builder, layout):
        self.builder = builder
        self.layout = layout  # strategy.StrategyLayout: placements and default pins
        self.params = {}      # Parameter -> tensor id, in order of first use
        self.recompute = []   # [first, end) op ids of modules run with recomputation
        self._recomputing = False
        self._names = itertools.count()
        self.stages = set()   # the stages set_stage placed ops on

    def unique_name(self, prefix):
        return f"{prefix}_{next(self._names)}"

    def __enter__(self):
        _current.append(self)
        return self

    def __exit__(self, *exc):
        _current.pop()

    @contextlib.contextmanager
    def recomputed(self):
        """The ops added inside are one segment the backward pass recomputes (Module.recompute);
        nested segments belong to the outermost."""
        if self._recomputing:
            yield
            return
        self._recomputing = True
        first = self.builder.op_count
        try:
            yield
        finally:
            self._recomputing = False
        self.recompute.append((first, self.builder.op_count))

    def set_stage(self, stage, placement=None):
        self.stages.add(stage)
        self.builder.set_stage(stage, str(placement or self.layout.stage_placement(stage)))

    def current_placement(self):
        from .placement import placement as Placement
        return Placement._from_text(self.builder.placement)

    def add(self, type, inputs, attrs=None, name=""):
        ids = self.builder.add(type, [t.id for t in inputs], attrs or {}, name)
        return [LazyTensor(self, i) for i in ids]

    def add1(self, type, inputs, attrs=None, name=""):
        return self.add(type, inputs, attrs, name)[0]

    def parameter(self, param):
        """The variable of `param` in this graph (created on first use, on the current
        placement, pinned as its module or the strategy says)."""
        if param in self.params:
            return LazyTensor(self, self.params[param])
        if param._name is None:
            param._name = f"param{next(_unnamed)}"
        name = param._name
        id = self.builder.variable(name, list(param.shape), param.dtype, {"init": "zeros"})
        if param._sbp is not None:
            pin = (sbp_module.nd_text(param._sbp, self.current_placement().ndim,
                                      f"parameter '{name}'"), [])
        else:
            pin = self.layout.default_param_pin(param)
        if pin is not None:
            self.builder.pin(id, *pin)
        self.params[param] = id
        return LazyTensor(self, id)


def _shape_with(shape, numel, what):
    """Resolves one -1 in `shape`."""
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1:
        raise _C.ShapeError(f"{what}: at most one -1 in {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or numel % known:
            raise _C.ShapeError(f"{what}: cannot reshape {numel} elements to {shape}")
        shape[shape.index(-1)] = numel // known
    return shape


def _slice_bounds(shape, index):
    """begin, end and the kept axes of `shape` indexed by `index` (numpy's basic indexing without
    steps or new axes); ShapeError naming what is out of range."""
    items = list(index) if isinstance(index, tuple) else [index]
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise _C.ShapeError("an index may hold one ... only")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    if len(items) > len(shape):
        raise _C.ShapeError(f"too many indices ({len(items)}) for a tensor of shape {list(shape)}")
    items += [slice(None)] * (len(shape) - len(items))
    begin, end, keep = [], [], []
    for axis, (item, extent) in enumerate(zip(items, shape)):
        if isinstance(item, bool) or not isinstance(item, (int, slice)):
            raise _C.InvalidArgumentError(f"index {item!r} on axis {axis}: expected an int, a slice or ...")
        if isinstance(item, int):
            i = item + extent if item < 0 else item
            if not 0 <= i < extent:
                raise _C.ShapeError(f"index {item} is out of range for axis {axis} of extent {extent}")
            begin.append(i)
            end.append(i + 1)
            continue
        if item.step not in (None, 1):
            raise _C.InvalidArgumentError(f"slice step {item.step} on axis {axis}: only step 1 is supported")
        lo, hi, _ = item.indices(extent)
        begin.append(lo)
        end.append(max(lo, hi))
        keep.append(axis)
    return begin, end, keep


class LazyTensor:
    """A tensor of the graph being traced: shape and dtype are known, values are not."""

    def __init__(self, trace, id, hints=None):
        self._trace = trace
        self.id = id
        self.hints = hints or {}

    @property
    def shape(self):
        return tuple(self._trace.builder.shape(self.id))

    @property
    def dtype(self):
        return self._trace.builder.dtype(self.id)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def name(self):
        return self._trace.builder.name(self.id)

    def numel(self):
        return math.prod(self.shape)

    def _binary(self, type, other):
        from .nn.module import Parameter
        if isinstance(other, Parameter):  # a weight used directly, e.g. a position table
            other = self._trace.parameter(other)
        if isinstance(other, LazyTensor):
            return self._trace.add1(type, [self, other])
        if isinstance(other, (int, float)) and type in ("add", "sub", "mul", "div"):
            value = float(other)
            if type == "add":
                return self._trace.add1("scalar_add", [self], {"value": value})
            if type == "sub":
                return self._trace.add1("scalar_add", [self], {"value": -value})
            if type == "mul":
                return self._trace.add1("scalar_mul", [self], {"value": value})
            return self._trace.add1("scalar_mul", [self], {"value": 1.0 / value})
        return NotImplemented

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other)
    def __sub__(self, other): return self._binary("sub", other)
    def __mul__(self, other): return self._binary("mul", other)
    def __rmul__(self, other): return self._binary("mul", other)
    def __truediv__(self, other): return self._binary("div", other)
    def __neg__(self): return self * -1.0

    def __pow__(self, exponent):
        """x ** p for a number p (scalar_pow)."""
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            return NotImplemented
        return self._trace.add1("scalar_pow", [self], {"exponent": float(exponent)})

    def __getitem__(self, index):
        """Basic indexing: ints, slices with step 1 and ..., as numpy; an int drops its axis."""
        begin, end, keep = _slice_bounds(self.shape, index)
        out = self
        if begin != [0] * self.ndim or end != list(self.shape):
            out = self._trace.add1("slice", [self], {"begin": begin, "end": end})
        if len(keep) != self.ndim:
            out = out.reshape([end[a] - begin[a] for a in keep])
        return out

    def __matmul__(self, other):
        type = "matmul" if self.ndim == 2 else "batch_matmul"
        return self._trace.add1(type, [self, other])

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        dims = _shape_with(shape, self.numel(), "reshape")
        return self._trace.add1("reshape", [self], {"shape": dims})

    def transpose(self, *perm):
        return self._trace.add1("transpose", [self], {"perm": list(perm)})

    def sum(self, axes=None, keepdims=False):
        return self._reduce("reduce_sum", axes, keepdims)

    def mean(self, axes=None, keepdims=False):
        return self._reduce("reduce_mean", axes, keepdims)

    def _reduce(self, type, axes, keepdims):
        axes = list(range(self.ndim)) if axes is None else ([axes] if isinstance(axes, int) else list(axes))
        return self._trace.add1(type, [self], {"axes": axes, "keepdims": bool(keepdims)})

    def to_global(self, placement=None, sbp=None):
        """This tensor with the layout `sbp` on `placement` (default: the current one). A new
        placement also becomes the current one: the ops that follow run there, as after
        set_stage; the compiler inserts the boxing that moves the data."""
        if placement is None and sbp is None:
            raise _C.InvalidArgumentError("to_global needs a placement, an sbp or both")
        trace = self._trace
        if placement is not None:
            trace.builder.placement = str(placement)
        out = trace.add1("identity", [self])
        if sbp is not None:
            ndim = trace.current_placement().ndim
            trace.builder.pin(out.id, sbp_module.nd_text(sbp, ndim, f"tensor '{self.name}'"))
        return out

    def __repr__(self):
        return f"LazyTensor({self.name}: {self.dtype}{list(self.shape)})"
