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


def _positive_int(what, name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _C.InvalidArgumentError(f"{what}: {name} must be a positive int, got {value!r}")


def causal_self_attention(q, k, v, heads, name=None, fused=False, kv_heads=None):
    """softmax(q k^T / sqrt(d) + causal mask) v per head; q [batch, seq, hidden], k and v
    [batch, seq, kv_heads * d] with d = hidden / heads. kv_heads below heads is grouped-query
    attention (each key-value head serves heads / kv_heads query heads, never copied).
    fused=True: one fused_attention op, which never holds the [seq, seq] scores."""
    trace = current_trace("causal_self_attention")
    _positive_int("causal_self_attention", "heads", heads)
    if kv_heads is not None:
        _positive_int("causal_self_attention", "kv_heads", kv_heads)
    name = name or trace.unique_name("attention")
    return LazyTensor(trace, trace.builder.attention(q.id, k.id, v.id, heads, name,
                                                     "fused" if fused else "unfused", kv_heads or 0))


def rms_norm(x, weight, eps=1e-5):
    """x / sqrt(mean(x^2, last axis) + eps) * weight: Llama's norm (no centring, no bias)."""
    return current_trace("rms_norm").add1("rms_norm", [x, weight], {"epsilon": float(eps)})


def rotary(x, head_dim, theta=10000.0):
    """Rotary position embedding of x [batch, seq, heads * head_dim]: in every head, the pair
    (i, i + head_dim/2) of the token at position p turns by p * theta^(-2i/head_dim) (the
    "rotate half" pairing of Megatron-LM and Hugging Face Llama). Apply it to q and k."""
    _positive_int("rotary", "head_dim", head_dim)
    return current_trace("rotary").add1("rotary", [x], {"head_dim": head_dim, "theta": float(theta)})
