"""The layers. Weights are stored [in, out] (the engine's matmul layout). A layer's
`parallel` hint names its Megatron role, which an explicit strategy turns into pins on the
tensor-parallel axis: "column" splits the output features, "row" the input features,
"vocab" an embedding table's rows; without a hint parameters are replicated (or, under
strategy "auto", left to the SBP search)."""
import math

from .. import _C, random
from .. import sbp as tw_sbp
from ..lazy import current_trace
from .module import Module, Parameter

_ROLES = (None, "column", "row", "vocab")


def _uniform(shape, bound):
    rng = random.next_generator()
    return lambda: rng.uniform(-bound, bound, size=shape).astype("float32")


def _constant(shape, value):
    import numpy as np
    return lambda: np.full(shape, value, dtype=np.float32)


def _check_positive(layer, **sizes):
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _C.InvalidArgumentError(f"{layer}: {name} must be a positive int, got {value!r}")


class Linear(Module):
    """y = x @ weight + bias over the last axis of x."""

    def __init__(self, in_features, out_features, bias=True, parallel=None):
        super().__init__()
        _check_positive("Linear", in_features=in_features, out_features=out_features)
        if parallel not in (None, "column", "row"):
            raise _C.InvalidArgumentError(f"Linear: parallel must be None, 'column' or 'row', got {parallel!r}")
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter((in_features, out_features), _uniform((in_features, out_features), bound))
        self.weight.role = parallel
        self.bias = None
        if bias:
            self.bias = Parameter((out_features,), _uniform((out_features,), bound))
            self.bias.role = "column_bias" if parallel == "column" else None
        self.parallel = parallel

    def to_global(self, placement=None, sbp=None):
        """Pins the weight to `sbp`; the bias follows (split where the weight's outputs are,
        replicated otherwise)."""
        self.weight.to_global(placement, sbp)
        if self.bias is not None and sbp is not None:
            layout = tuple(sbp) if isinstance(sbp, (tuple, list)) else (sbp,)
            self.bias.to_global(placement, tuple(tw_sbp.split(0) if s == tw_sbp.split(1)
                                                 else tw_sbp.broadcast for s in layout))
        return self

    def forward(self, x):
        trace = current_trace("Linear")
        if x.shape[-1] != self.in_features:
            raise _C.ShapeError(f"Linear({self.in_features}, {self.out_features}) got input of "
                                f"shape {list(x.shape)}")
        lead = x.shape[:-1]
        flat = x if x.ndim == 2 else x.reshape(-1, self.in_features)
        y = trace.add1("matmul", [flat, trace.parameter(self.weight)])
        if self.bias is not None:
            y = trace.add1("bias_add", [y, trace.parameter(self.bias)])
        if x.ndim != 2:
            y = y.reshape(*lead, self.out_features)
        if self.parallel == "column":
            y.hints["split_last"] = True
        return y


class Embedding(Module):
    """Rows of a [num_embeddings, embedding_dim] table, looked up by integer ids."""

    def __init__(self, num_embeddings, embedding_dim, parallel=None):
        super().__init__()
        _check_positive("Embedding", num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        if parallel not in (None, "vocab"):
            raise _C.InvalidArgumentError(f"Embedding: parallel must be None or 'vocab', got {parallel!r}")
        rng = random.next_generator()
        shape = (num_embeddings, embedding_dim)
        self.weight = Parameter(shape, lambda: rng.normal(0, 0.02, size=shape).astype("float32"))
        self.weight.role = parallel
        self.num_embeddings = num_embeddings

    def forward(self, ids):
        trace = current_trace("Embedding")
        if ids.dtype not in ("i32", "i64"):
            raise _C.InvalidArgumentError(f"Embedding: ids must be integers, got {ids.dtype}")
        return trace.add1("embedding", [trace.parameter(self.weight), ids])


class LayerNorm(Module):
    """Normalises the last axis, then scales and shifts it."""

    def __init__(self, normalized_shape, eps=1e-5):
        super().__init__()
        _check_positive("LayerNorm", normalized_shape=normalized_shape)
        self.weight = Parameter((normalized_shape,), _constant((normalized_shape,), 1.0))
        self.bias = Parameter((normalized_shape,), _constant((normalized_shape,), 0.0))
        self.eps = float(eps)

    def forward(self, x):
        trace = current_trace("LayerNorm")
        return trace.add1("layer_norm", [x, trace.parameter(self.weight), trace.parameter(self.bias)],
                          {"epsilon": self.eps})


class RMSNorm(Module):
    """Scales the last axis to unit root-mean-square, then by a learned weight (Llama's norm)."""

    def __init__(self, normalized_shape, eps=1e-5):
        super().__init__()
        _check_positive("RMSNorm", normalized_shape=normalized_shape)
        self.weight = Parameter((normalized_shape,), _constant((normalized_shape,), 1.0))
        self.eps = float(eps)

    def forward(self, x):
        trace = current_trace("RMSNorm")
        return trace.add1("rms_norm", [x, trace.parameter(self.weight)], {"epsilon": self.eps})


class RotaryEmbedding(Module):
    """Rotary positions for q or k [batch, seq, heads * head_dim] (functional.rotary); no
    parameters."""

    def __init__(self, head_dim, theta=10000.0):
        super().__init__()
        _check_positive("RotaryEmbedding", head_dim=head_dim)
        if head_dim % 2:
            raise _C.InvalidArgumentError(f"RotaryEmbedding: head_dim must be even, got {head_dim}")
        self.head_dim = head_dim
        self.theta = float(theta)

    def forward(self, x):
        return current_trace("RotaryEmbedding").add1(
            "rotary", [x], {"head_dim": self.head_dim, "theta": self.theta})


class ReLU(Module):
    def forward(self, x):
        return current_trace("ReLU").add1("relu", [x])


class GELU(Module):
    def forward(self, x):
        return current_trace("GELU").add1("gelu", [x])


class SiLU(Module):
    def forward(self, x):
        return current_trace("SiLU").add1("silu", [x])


class Dropout(Module):
    """Zeroes each element with probability p while training (scaling the rest by 1/(1-p));
    the identity in eval mode. Masks are drawn from a seed fixed at construction."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise _C.InvalidArgumentError(f"Dropout: p must be in [0, 1), got {p!r}")
        self.p = float(p)
        self.seed = random.next_seed()

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return current_trace("Dropout").add1("dropout", [x], {"rate": self.p, "seed": self.seed})
