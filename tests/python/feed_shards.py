"""Run by test_examples.py, in one process and under mpirun -np 2: a small MLP trained for 3
steps under dp=2 with feed="local" (each rank passes its own rows, from feed_rows(), as a
DistributedSampler user would) and with feed="global" (every rank passes the whole batch).
Prints this rank's feed shapes, both runs' losses exactly, and what passing the whole batch
under feed="local" raises."""
import numpy as np

import twinflow as tw
from conftest import Mlp, TrainStep, batches


def train(feed, data):
    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
    step.compile(*data[0], strategy="dp=2", feed=feed)  # the whole batch's shapes
    rows = {name: slice(*r) for name, r in step.feed_rows().items()}
    losses = []
    for x, labels in data:
        if feed == "local":
            x, labels = x[rows["x"]], labels[rows["labels"]]
        losses.append(step(x, labels))
    return step, losses


def main():
    data = batches(3)
    step, local = train("local", data)
    _, whole = train("global", data)
    print("rank", tw.distributed.rank(), "shapes", sorted(step.feed_shapes().items()), flush=True)
    if tw.distributed.is_main():
        print("local", " ".join(repr(v) for v in local))
        print("global", " ".join(repr(v) for v in whole))
    if tw.distributed.world_size() > 1:
        try:
            step(*data[0])  # the whole batch, where this rank's rows are expected
            print("not refused")
        except ValueError as e:
            print(f"refused {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
