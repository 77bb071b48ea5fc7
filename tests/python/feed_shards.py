"""Run by test_examples.py, in one process and under mpirun -np 2: a small MLP trained for 3
steps under dp=2 with feed="local" (each rank passes its own rows, from feed_rows(), as a
DistributedSampler user would) and with feed="global" (every rank passes the whole batch).
Writes this rank's feed shapes, both runs' losses exactly, and what passing the whole batch
under feed="local" raises, to DIR/rank<r>.txt (stdout without DIR)."""
import os
import sys

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
    lines = [f"shapes {sorted(step.feed_shapes().items())}",
             "local " + " ".join(repr(v) for v in local),
             "global " + " ".join(repr(v) for v in whole)]
    if tw.distributed.world_size() > 1:
        try:
            step(*data[0])  # the whole batch, where this rank's rows are expected
            lines.append("not refused")
        except ValueError as e:
            lines.append(f"refused {type(e).__name__}: {e}")
        # Traced at its first step from a shard: the shard would be taken for the batch.
        model = Mlp()
        fresh = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(strategy="dp=2")
        try:
            fresh(data[0][0][:4], data[0][1][:4])
            lines.append("first step from a shard not refused")
        except ValueError as e:
            lines.append(f"first step from a shard refused {type(e).__name__}: {e}")
    # One file per rank (the ranks' stdout may interleave), else stdout.
    report = "\n".join(lines) + "\n"
    if len(sys.argv) > 1:
        with open(os.path.join(sys.argv[1], f"rank{tw.distributed.rank()}.txt"), "w") as f:
            f.write(report)
    else:
        print(report, end="")


if __name__ == "__main__":
    main()
