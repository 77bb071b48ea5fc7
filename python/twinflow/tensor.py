"""Host tensors: numpy data with, optionally, the global layout (placement and SBP) that a
graph input should take. What goes into and comes out of a tw.Graph."""
import numpy as np

from . import _C
from .placement import placement as Placement

_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}


def dtype_name(np_dtype):
    """numpy dtype -> engine dtype name; floats default to f32, ints to i32 (as torch's
    defaults for data), bools become i32."""
    kind = np.dtype(np_dtype).kind
    if kind == "f":
        return "f64" if np.dtype(np_dtype) == np.float64 else "f32"
    if kind in "iub":
        return "i64" if np.dtype(np_dtype) == np.int64 else "i32"
    raise _C.InvalidArgumentError(f"unsupported dtype {np.dtype(np_dtype)} (numeric arrays only)")


class TensorSpec:
    """A graph input's shape, dtype and optional layout, for compiling before data exists."""

    def __init__(self, shape, dtype="f32", placement=None, sbp=None):
        if dtype not in _DTYPES:
            raise _C.InvalidArgumentError(f"TensorSpec: dtype must be one of {list(_DTYPES)}")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.placement = placement
        self.sbp = sbp


class Tensor:
    """numpy data plus an optional global layout (``to_global``)."""

    def __init__(self, data, placement=None, sbp=None):
        self._data = np.ascontiguousarray(data)
        dtype_name(self._data.dtype)  # refuse what the engine cannot hold
        if (placement is None) != (sbp is None):
            raise _C.InvalidArgumentError("to_global needs both a placement and an sbp")
        if placement is not None and not isinstance(placement, Placement):
            raise _C.InvalidArgumentError(f"placement must be a tw.placement, got {placement!r}")
        self.placement = placement
        self.sbp = sbp

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return dtype_name(self._data.dtype)

    @property
    def is_global(self):
        return self.placement is not None

    def numpy(self):
        return self._data.copy()

    def to_global(self, placement, sbp):
        return Tensor(self._data, placement, sbp)

    def spec(self):
        return TensorSpec(self.shape, self.dtype, self.placement, self.sbp)

    def __repr__(self):
        layout = f", placement={self.placement}, sbp={self.sbp}" if self.is_global else ""
        return f"tw.Tensor(shape={self.shape}, dtype={self.dtype}{layout})"


def tensor(data, dtype=None, placement=None, sbp=None):
    """A tw.Tensor from anything numpy takes; `dtype` one of f32, f64, i32, i64."""
    numpy_given = isinstance(data, np.ndarray)
    array = np.asarray(data)
    if dtype is not None:
        if dtype not in _DTYPES:
            raise _C.InvalidArgumentError(f"dtype must be one of {list(_DTYPES)}, got {dtype!r}")
        array = array.astype(_DTYPES[dtype])
    elif array.dtype.kind in "iub" and not (numpy_given and array.dtype == np.int64):
        array = array.astype(np.int32)  # Python ints: i32, as the engine's labels and ids
    elif array.dtype.kind == "f" and not (numpy_given and array.dtype == np.float64):
        array = array.astype(np.float32)  # Python floats: f32; numpy keeps f64
    return Tensor(array, placement, sbp)


def from_numpy(array):
    return Tensor(np.asarray(array))


def _has_dtype(value):
    """numpy arrays and scalars, and tw.Tensor, carry a dtype; Python lists and numbers not."""
    return isinstance(value, (Tensor, np.ndarray, np.generic))


def as_array(value, what):
    """A step's argument as numpy (tw.Tensor or array-like). Values without a dtype of their
    own (lists, Python numbers) take tw.tensor's defaults: floats f32, ints i32."""
    if isinstance(value, Tensor):
        return value._data
    if not _has_dtype(value):
        return tensor(value)._data
    array = np.asarray(value)
    if array.dtype == object:
        raise _C.InvalidArgumentError(f"{what}: not a numeric array")
    dtype_name(array.dtype)
    return array


def as_spec(value, what):
    """The TensorSpec of a graph input's example or batch. An empty batch (a leading extent of
    0) is refused: its mean loss would be 0/0."""
    if isinstance(value, TensorSpec):
        spec = value
    elif isinstance(value, Tensor):
        spec = value.spec()
    else:
        array = as_array(value, what)
        spec = TensorSpec(array.shape, dtype_name(array.dtype))
    if len(spec.shape) >= 1 and spec.shape[0] == 0:
        raise _C.InvalidArgumentError(f"{what}: an empty batch (shape {tuple(spec.shape)})")
    return spec


def _numpy_name(dtype):
    return np.dtype(_DTYPES[dtype]).name


def feed_array(value, spec, name):
    """A step's argument for the graph input `name` of `spec` (its whole-step shape and
    dtype), as PyTorch users expect: data with a dtype of its own keeps it unless the
    conversion is lossless (integers that fit, integers a float holds exactly, float32 to
    float64); float64 is never narrowed to float32 silently, and floats never become
    integers. Data without a dtype (lists, Python numbers) is converted to the input's dtype,
    as torch.tensor() converts it to the default float type; float values for an integer
    input are refused."""
    want = _DTYPES[spec.dtype]
    typed = _has_dtype(value)
    array = value._data if isinstance(value, Tensor) else np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "fiub":
        raise _C.InvalidArgumentError(f"input '{name}': not a numeric array ({array.dtype})")
    if array.dtype == want:
        return array
    expects = f"input '{name}' expects {_numpy_name(spec.dtype)} {list(spec.shape)}"
    if array.dtype.kind == "f" and np.dtype(want).kind != "f":
        raise _C.InvalidArgumentError(f"{expects}; got floating-point values ({array.dtype}): "
                                      f"pass integers, e.g. {name}.astype(np.{np.dtype(want).name})")
    if typed and array.dtype.kind == "f" and array.dtype.itemsize > np.dtype(want).itemsize:
        raise _C.InvalidArgumentError(f"{expects}; got {array.dtype}: pass "
                                      f"{name}.astype(np.{np.dtype(want).name}) (twinflow does "
                                      "not narrow floats silently)")
    converted = array.astype(want)
    if array.dtype.kind != "f":  # integers (or bools): only if every value comes back
        with np.errstate(invalid="ignore", over="ignore"):
            exact = np.array_equal(converted.astype(array.dtype), array)
        if not exact:
            raise _C.InvalidArgumentError(f"{expects}; got {array.dtype} values that "
                                          f"{np.dtype(want).name} cannot hold exactly")
    return converted
