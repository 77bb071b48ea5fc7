"""Optimizers, shaped like torch.optim. They run inside the compiled graph (update ops after
autograd), so a tw.Graph takes one with ``add_optimizer``; the state (momentum, Adam moments)
lives with the parameters and is saved in checkpoints. ``clip_grad`` > 0 clips by the global
norm of every gradient first (torch.nn.utils.clip_grad_norm_, Megatron's --clip-grad), summed
over every shard and stage of the distributed graph.

The learning rate is a tensor of the graph: ``schedule`` ("constant", "linear" or "cosine"),
``warmup`` and ``decay_steps`` shape it step by step as Megatron-LM's --lr-decay-style,
--lr-warmup-iters and --lr-decay-iters do (down to ``min_lr``), and ``param_groups[0]["lr"]``,
as in torch, sets its base between steps (the next step() reads it)."""
from . import _C
from .nn.module import Parameter

_SCHEDULES = ("constant", "linear", "cosine")


def _check_number(owner, name, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise _C.InvalidArgumentError(f"{owner}: {name} must be a non-negative number, got {value!r}")


class Optimizer:
    def __init__(self, params, schedule="constant", warmup=0, decay_steps=0, min_lr=0.0, **hyper):
        self.params = list(params)
        owner = type(self).__name__
        if not self.params or not all(isinstance(p, Parameter) for p in self.params):
            raise _C.InvalidArgumentError(f"{owner}: expected a non-empty list of "
                                          "tw.nn.Parameter (e.g. model.parameters())")
        for name, value in dict(hyper, warmup=warmup, decay_steps=decay_steps, min_lr=min_lr).items():
            _check_number(owner, name, value)
        if schedule not in _SCHEDULES:
            raise _C.InvalidArgumentError(f"{owner}: schedule must be one of {', '.join(_SCHEDULES)}, "
                                          f"got {schedule!r}")
        self.hyper = hyper
        self.schedule = {"schedule": schedule, "warmup": int(warmup), "decay_steps": int(decay_steps),
                         "min_lr": float(min_lr)}
        # torch's shape: one group, whose "lr" the next step reads.
        self.param_groups = [{"lr": hyper["lr"], "params": self.params}]
        _C.parse_optimizer(self.spec())  # the engine's checks, now rather than at compile

    def spec(self):
        """The engine's optimizer text, e.g. "sgd:lr=0.1,momentum=0.0,...,schedule=constant"."""
        fields = [f"{k}={float(v)!r}" for k, v in self.hyper.items()]
        fields += [f"{k}={v}" for k, v in self.schedule.items()]
        return f"{self.kind}:{','.join(fields)}"

    @property
    def lr(self):
        """The base learning rate the next step uses (param_groups[0]["lr"])."""
        lr = self.param_groups[0]["lr"]
        _check_number(type(self).__name__, "param_groups[0]['lr']", lr)
        return float(lr)


class SGD(Optimizer):
    kind = "sgd"

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0, clip_grad=0.0, **schedule):
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay,
                         clip_grad=clip_grad, **schedule)


class Adam(Optimizer):
    kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 clip_grad=0.0, **schedule):
        super().__init__(params, lr=lr, beta1=betas[0], beta2=betas[1], epsilon=eps,
                         weight_decay=weight_decay, clip_grad=clip_grad, **schedule)


class AdamW(Adam):
    kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 clip_grad=0.0, **schedule):
        super().__init__(params, lr, betas, eps, weight_decay, clip_grad, **schedule)
