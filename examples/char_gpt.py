"""A character-level GPT trained on examples/data/actors.txt with a 2-stage pipeline (1F1B,
4 micro-batches): the embedding and the first block on stage 0, the second block and the
head on stage 1, each stage on its own device.

    PYTHONPATH=build/python /usr/bin/python3 examples/char_gpt.py
    mpirun -np 2 /usr/bin/python3 examples/char_gpt.py       # one stage per rank

Prints the loss as it falls and a sample of greedy generation (the test asserts the last
losses are well below the first).
"""
import argparse
import os
import sys

import numpy as np

import twinflow as tw
from twinflow.nn import functional as F


class Block(tw.nn.Module):
    """Pre-norm causal self-attention and a GELU MLP, with residual connections."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = tw.nn.LayerNorm(hidden), tw.nn.LayerNorm(hidden)
        self.q, self.k, self.v = (tw.nn.Linear(hidden, hidden, parallel="column") for _ in range(3))
        self.proj = tw.nn.Linear(hidden, hidden, parallel="row")
        self.fc1 = tw.nn.Linear(hidden, 4 * hidden, parallel="column")
        self.fc2 = tw.nn.Linear(4 * hidden, hidden, parallel="row")

    def forward(self, h):
        a = self.ln1(h)
        h = h + self.proj(F.causal_self_attention(self.q(a), self.k(a), self.v(a), self.heads))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class CharGpt(tw.nn.Module):
    def __init__(self, vocab, sequence, hidden=64, heads=4, layers=2, stages=2):
        super().__init__()
        self.tokens = tw.nn.Embedding(vocab, hidden)
        self.positions = tw.nn.Parameter((sequence, hidden),
                                         lambda: np.zeros((sequence, hidden), np.float32))
        self.blocks = tw.nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        for i, block in enumerate(self.blocks):
            block.set_stage(i * stages // layers)  # balanced, in order
        self.ln = tw.nn.LayerNorm(hidden)
        self.head = tw.nn.Linear(hidden, vocab)

    def forward(self, ids):
        h = self.tokens(ids) + self.positions
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln(h))


class Logits(tw.Graph):
    """The same model for inference (sharing its parameters with the training graph)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, ids):
        return self.model(ids)


def generate(model, codes, chars, sequence, length=120):
    """Greedy continuation of the first `sequence` characters of the text."""
    logits = Logits(model).compile(strategy="pp=2,mb=1")
    context = list(codes[:sequence])
    for _ in range(length):
        out = logits(np.array([context[-sequence:]], dtype=np.int32))
        context.append(int(np.argmax(out[0, -1])))
    return "".join(chars[c] for c in context)


class TrainStep(tw.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = tw.nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, ids, labels):
        return self.loss_fn(self.model(ids), labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="pp=2,mb=4,schedule=1f1b")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--sequence", type=int, default=32)
    args = parser.parse_args()

    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "actors.txt")).read()
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], dtype=np.int32)

    tw.manual_seed(0)
    model = CharGpt(len(chars), args.sequence)
    step = TrainStep(model, tw.optim.Adam(model.parameters(), lr=3e-3))
    step.compile(strategy=args.strategy)
    rng = np.random.default_rng(0)
    losses = []
    for i in range(args.steps):
        starts = rng.integers(0, len(codes) - args.sequence - 1, size=args.batch)
        ids = np.stack([codes[s:s + args.sequence] for s in starts])
        labels = np.stack([codes[s + 1:s + args.sequence + 1] for s in starts])
        losses.append(step(ids, labels))
        if tw.distributed.is_main() and (i % 25 == 0 or i == args.steps - 1):
            print(f"step {i:4d}  loss {losses[-1]:.4f}", flush=True)
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    if tw.distributed.is_main():
        print(f"strategy {args.strategy}, {len(chars)} characters: loss {first:.4f} -> {last:.4f} "
              f"(mean of the first and last 10 steps), step time {step.mean_step_seconds * 1e3:.1f} ms")
        print(step.memory())
    sample = generate(model, codes, chars, args.sequence)
    if tw.distributed.is_main():
        print("greedy sample:", repr(sample))
    return 0 if last < 0.6 * first else 1


if __name__ == "__main__":
    sys.exit(main())
