"""tw.tune: rank the strategies a modelled cluster allows for a tw.Graph or a built-in model,
with the planner `twinflow tune` drives (planner/tuner.h): every (dp, tp, pp, micro-batches,
schedule, vp, sp, zero, recompute) the model's graph can use, screened by its memory floor and
step-time bound, compiled and simulated where it could still rank; ranked by simulated step
time. Its rows are `twinflow tune --json`'s.

    report = tw.tune(step, x, labels, cluster="dgx-h100", nodes=1, options="precision=bf16")
    report = tw.tune(tw.models.llama(preset="llama3-8b"), cluster="dgx-h100", nodes=8)
    print(report); report.plot("tune.png"); step.compile(x, labels, strategy=report.best)

A ranking `twinflow tune --json FILE` wrote plots the same way:

    /usr/bin/python3 -m twinflow.tune FILE.json tune.png
"""
import json
import sys
import time

from . import _C

class TuneReport:
    """The ranking: `rows` as `twinflow tune --json` writes them (those that fit first, fastest
    first, with rank, strategy, step_s, samples_per_s, mfu, peak_bytes; then those dropped, with
    why), `best` the fastest strategy, `interrupted` when Ctrl-C cut the tune short."""

    def __init__(self, rows, capacity=None, interrupted=False, seconds=0.0):
        self.rows = rows
        self.capacity = capacity
        self.interrupted = interrupted
        self.seconds = seconds

    @classmethod
    def from_json(cls, path):
        with open(path) as f:
            return cls(json.load(f))

    @property
    def ranked(self):
        return [r for r in self.rows if r["fits"]]

    @property
    def best(self):
        return self.ranked[0]["strategy"] if self.ranked else None

    def to_json(self):
        return json.dumps(self.rows, indent=1)

    def __str__(self):
        lines = [f"{len(self.ranked)} of {len(self.rows)} strategies fit"
                 + (" (interrupted)" if self.interrupted else "")]
        for r in self.ranked:
            lines.append(f"{r['rank']:>4}  {r['strategy']:<44} {r['step_s'] * 1e3:10.3f} ms"
                         f"  MFU {100 * r['mfu']:5.1f}%  {r['peak_bytes'] / 2**30:8.2f} GiB")
        lines += [f"dropped {r['strategy']}: {r['why']}" for r in self.rows if not r["fits"]]
        return "\n".join(lines)

    def plot(self, path):
        """A PNG of each fitting strategy's step time and peak memory, fastest first (with the
        device's capacity when known)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ranked = self.ranked
        if not ranked:
            raise ValueError("no strategy fits: nothing to plot")
        names = [r["strategy"] for r in ranked]
        fig, (top, bottom) = plt.subplots(2, 1, sharex=True,
                                          figsize=(max(6, 0.35 * len(ranked) + 2), 7))
        top.bar(range(len(ranked)), [r["step_s"] * 1e3 for r in ranked], color="tab:blue")
        top.set_ylabel("step time (ms)")
        top.set_title("simulated strategies, fastest first")
        bottom.bar(range(len(ranked)), [r["peak_bytes"] / 2**30 for r in ranked],
                   color="tab:orange")
        if self.capacity:
            bottom.axhline(self.capacity / 2**30, color="red", linestyle="--", label="capacity")
            bottom.legend()
        bottom.set_ylabel("peak memory (GiB)")
        bottom.set_xticks(range(len(ranked)))
        bottom.set_xticklabels(names, rotation=90, fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)


def _builder(target, examples):
    """(build, pipeline, sequence_parallel, model): how the tuner builds one candidate's model
    of `target` (a tw.models model, or a tw.Graph traced on `examples`), which options can
    change that model's graph, and what the tuner reads of the model (its batch, layers and
    attention: _C.builtin_extent's tuple)."""
    from .models import BuiltinModel
    if isinstance(target, BuiltinModel):
        if examples:
            raise _C.InvalidArgumentError("tune: a tw.models model takes no example inputs")

        def build(strategy, devices, fused, layers=0, batch=0):
            # fused: the tuner chose fused attention for an LLM on GPUs whose attention was
            # left to it; layers, batch: a proxy's extent (0: the model's own).
            config = dict(target.config)
            if fused:
                config["attention"] = "fused"
            if layers:
                config["layers"] = layers
            if batch:
                config["batch"] = batch
            if config == target.config:
                return target._build(strategy, devices)
            return BuiltinModel(target.name, config, target.strategy, target.devices,
                                target.optimizer, target.seed)._build(strategy, devices)
        return (build, True, target.name != "mlp",
                _C.builtin_extent(target.name, target.config))
    if not examples:
        raise _C.InvalidArgumentError("tune: pass the graph's example inputs (the whole batch)")
    specs = target._specs_of(examples)
    # Python graphs pin no sequence-parallel layouts, gain from pp only where build() places
    # its layers on stages (set_stage), and recompute the modules marked so, whatever the
    # strategy says.
    batch = int(examples[0].shape[0]) if getattr(examples[0], "shape", None) else 0
    return (lambda strategy, devices, fused, layers=0, batch=0: target._model(specs, strategy, devices),
            target._stages_used(specs), False, (batch, 0, False, False, False, False))


def tune(target, *example_inputs, cluster="dgx-h100", nodes=None, max_micro_batches=None,
         micro_batch_size=None, options="", top=20, exhaustive=False, jobs=1, replica=False,
         progress=True):
    """Ranks the strategies `cluster` x `nodes` allows for `target` by simulated step time,
    with the planner `twinflow tune` drives (so both rank alike): a tw.models model, or a
    tw.Graph on example inputs (the whole batch). Every micro-batch count the batch allows is
    tried (max_micro_batches caps them; micro_batch_size fixes Megatron's micro-batch size), and
    an LLM on GPUs is tuned in bf16 with fused attention unless options give a precision or
    the model its attention. options: strategy options every candidate keeps
    ("recompute=full"); top: rows ranked (a candidate that cannot join them is not simulated
    unless exhaustive); jobs: processes sharing the candidates (forked); replica: each
    candidate folded to one data-parallel replica. Ctrl-C stops after the candidate in
    progress and ranks those done. The graph's own compiled state is left as it was. Returns a
    TuneReport."""
    build, pipeline, sp, model = _builder(target, example_inputs)
    capacity = _C.cluster_shape(cluster, nodes)[2]
    start = time.monotonic()
    rows, _, interrupted = _C.tune(build, cluster, nodes, model, _count(max_micro_batches,
                                   "max_micro_batches"), _count(micro_batch_size,
                                   "micro_batch_size"), options, top, exhaustive, jobs,
                                   replica, pipeline, sp, progress)
    return TuneReport(json.loads(rows), capacity, interrupted, time.monotonic() - start)


def _count(value, name):
    """A positive count, or None (0 to the engine: unset); anything else is refused by name."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _C.InvalidArgumentError(f"{name} must be a positive integer, not {value!r}")
    return value


def _main(argv):
    if len(argv) != 2:
        print("usage: python3 -m twinflow.tune RANKING.json PLOT.png", file=sys.stderr)
        return 2
    TuneReport.from_json(argv[0]).plot(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
