"""Stateless operations on graph tensors."""
from .. import _C
from ..lazy import LazyTensor, current_trace


def relu(x):
    return current_trace("relu").add1("relu", [x])


def gelu(x):
    return current_trace("gelu").add1("gelu", [x])


def silu(x):
    """x * sigmoid(x) (swish), the gate of Llama's SwiGLU MLP."""
    return current_trace("silu").add1("silu", [x])


def tanh(x):
    return current_trace("tanh").add1("tanh", [x])


def softmax(x, axis=-1):
    return current_trace("softmax").add1("softmax", [x], {"axis": int(axis)})


def log_softmax(x, axis=-1):
    return current_trace("log_softmax").add1("log_softmax", [x], {"axis": int(axis)})


def causal_self_attention(q, k, v, heads, name=None, fused=False):
    """softmax(q k^T / sqrt(d) + causal mask) v per head; q, k, v [batch, seq, hidden].
    fused=True: one fused_attention op, which never holds the [seq, seq] scores."""
    trace = current_trace("causal_self_attention")
    if not isinstance(heads, int) or heads < 1:
        raise _C.InvalidArgumentError(f"causal_self_attention: heads must be a positive int, got {heads!r}")
    name = name or trace.unique_name("attention")
    return LazyTensor(trace, trace.builder.attention(q.id, k.id, v.id, heads, name,
                                                            "fused" if fused else "unfused"))
