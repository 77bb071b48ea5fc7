"""Shared pieces of the Python tests: small models and graphs built with the public API."""
import os

import numpy as np
import pytest

import twinflow as tw

REPO = os.environ.get("TWINFLOW_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Mlp(tw.nn.Module):
    def __init__(self, widths=(12, 16, 16, 5), parallel=True):
        super().__init__()
        roles = ["column", "row"] if parallel else [None, None]
        layers = []
        for i in range(len(widths) - 1):
            role = roles[i % 2] if i < len(widths) - 2 else None
            layers.append(tw.nn.Linear(widths[i], widths[i + 1], parallel=role))
            if i < len(widths) - 2:
                layers.append(tw.nn.ReLU())
        self.body = tw.nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class TrainStep(tw.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = tw.nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, labels):
        return self.loss_fn(self.model(x), labels)


class Forward(tw.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def batches(steps, batch=8, features=12, classes=5, seed=3):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, (batch, features)).astype(np.float32),
             rng.integers(0, classes, batch).astype(np.int32)) for _ in range(steps)]


def train(strategy, steps=4, optimizer=lambda p: tw.optim.SGD(p, lr=0.1, momentum=0.9), seed=0,
          devices=None, **model_args):
    """Losses of `steps` steps of the small MLP under `strategy`, and the model."""
    tw.manual_seed(seed)
    model = Mlp(**model_args)
    stages = tw._C.parse_strategy(strategy).stages if strategy != "auto" else 1
    linears = [i for i, m in enumerate(model.body) if isinstance(m, tw.nn.Linear)]
    for stage in range(1, stages):  # a pipelined graph places its layers (set_stage)
        model.body[linears[stage * len(linears) // stages]].set_stage(stage)
    step = TrainStep(model, optimizer(model.parameters())).compile(strategy=strategy,
                                                                   devices=devices)
    return [step(x, y) for x, y in batches(steps)], model, step


@pytest.fixture
def mlp_train():
    return train
