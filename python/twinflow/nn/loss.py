"""Losses."""
from .. import _C
from ..lazy import current_trace
from .module import Module


class CrossEntropyLoss(Module):
    """Softmax cross-entropy of logits [..., classes] against integer labels [...], averaged
    (reduction "mean") or per example ("none"). Logits split by class over devices (a
    column-parallel head) get Megatron's vocabulary-parallel loss, without gathering them."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "none"):
            raise _C.InvalidArgumentError(f"CrossEntropyLoss: reduction must be 'mean' or 'none', got {reduction!r}")
        self.reduction = reduction

    def forward(self, logits, labels):
        trace = current_trace("CrossEntropyLoss")
        if labels.dtype not in ("i32", "i64"):
            raise _C.InvalidArgumentError(f"CrossEntropyLoss: labels must be integers, got {labels.dtype}")
        if tuple(logits.shape[:-1]) != tuple(labels.shape):
            raise _C.ShapeError(f"CrossEntropyLoss: logits {list(logits.shape)} do not match "
                                f"labels {list(labels.shape)}")
        if logits.ndim > 2:  # the engine's loss takes [examples, classes]
            logits = logits.reshape(-1, logits.shape[-1])
            labels = labels.reshape(-1)
        split = bool(logits.hints.get("split_last")) and trace.layout.tp > 1
        from ..lazy import LazyTensor
        losses = LazyTensor(trace, trace.builder.cross_entropy(logits.id, labels.id, split))
        return losses.mean() if self.reduction == "mean" else losses
