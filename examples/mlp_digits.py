"""An MLP on scikit-learn's bundled handwritten digits (8x8 images, 10 classes), trained with
hybrid parallelism: data parallel over 2 devices times Megatron tensor parallel over 2.

    PYTHONPATH=build/python /usr/bin/python3 examples/mlp_digits.py
    mpirun -np 2 /usr/bin/python3 examples/mlp_digits.py     # the 4 devices on 2 ranks

Prints the loss per epoch and the held-out accuracy (the test asserts at least 95%).
"""
import argparse
import sys

import numpy as np
from sklearn.datasets import load_digits

import twinflow as tw


class Mlp(tw.nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.body = tw.nn.Sequential(
            tw.nn.Linear(64, hidden, parallel="column"), tw.nn.ReLU(),
            tw.nn.Linear(hidden, hidden, parallel="row"), tw.nn.ReLU(),
            tw.nn.Linear(hidden, 10))

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


class Predict(tw.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="dp=2,tp=2")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--target", type=float, default=0.95, help="exit 1 below this accuracy")
    args = parser.parse_args()

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    test, train = order[:360], order[360:]
    train = train[: len(train) // args.batch * args.batch]  # whole batches only

    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9))
    # Compiled for the whole (global) batch. Under mpirun each rank then feeds only its own rows
    # of every batch (feed="local", as with DistributedSampler); in one process, all of them.
    step.compile(x[:args.batch], y[:args.batch], strategy=args.strategy)
    rows = {name: slice(*r) for name, r in step.feed_rows().items()}
    # Prediction takes the whole held-out set on every rank (feed="global").
    predict = Predict(model).compile(strategy=args.strategy, feed="global")

    rng = np.random.default_rng(1)
    for epoch in range(args.epochs):
        batches = rng.permutation(train).reshape(-1, args.batch)
        losses = [step(x[b[rows["x"]]], y[b[rows["labels"]]]) for b in batches]
        if tw.distributed.is_main():
            print(f"epoch {epoch:3d}  loss {np.mean(losses):.4f}", flush=True)
    model.eval()  # traced at its first call: no dropout, were there any
    logits = predict(x[test])
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y[test]))
    if tw.distributed.is_main():
        print(f"strategy {args.strategy} on {tw.distributed.world_size()} rank(s): "
              f"held-out accuracy {accuracy:.4f} ({len(test)} images), "
              f"step time {step.mean_step_seconds * 1e3:.2f} ms")
    return 0 if accuracy >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
