"""Optimizers, shaped like torch.optim. They run inside the compiled graph (update ops after
autograd), so a tw.Graph takes one with ``add_optimizer``; the state (momentum, Adam moments)
lives with the parameters and is saved in checkpoints. ``clip_grad`` > 0 clips by the global
norm of every gradient first (torch.nn.utils.clip_grad_norm_, Megatron's --clip-grad), summed
over every shard and stage of the distributed graph."""
from . import _C
from .nn.module import Parameter


class Optimizer:
    def __init__(self, params, **hyper):
        self.params = list(params)
        if not self.params or not all(isinstance(p, Parameter) for p in self.params):
            raise _C.InvalidArgumentError(f"{type(self).__name__}: expected a non-empty list of "
                                          "tw.nn.Parameter (e.g. model.parameters())")
        for name, value in hyper.items():
            if not isinstance(value, (int, float)) or value < 0:
                raise _C.InvalidArgumentError(f"{type(self).__name__}: {name} must be a "
                                              f"non-negative number, got {value!r}")
        self.hyper = hyper

    def spec(self):
        """The engine's optimizer text, e.g. "sgd:lr=0.1,momentum=0.9"."""
        fields = ",".join(f"{k}={float(v)!r}" for k, v in self.hyper.items())
        return f"{self.kind}:{fields}"


class SGD(Optimizer):
    kind = "sgd"

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0, clip_grad=0.0):
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay,
                         clip_grad=clip_grad)


class Adam(Optimizer):
    kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 clip_grad=0.0):
        super().__init__(params, lr=lr, beta1=betas[0], beta2=betas[1], epsilon=eps,
                         weight_decay=weight_decay, clip_grad=clip_grad)


class AdamW(Adam):
    kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 clip_grad=0.0):
        super().__init__(params, lr, betas, eps, weight_decay, clip_grad)
