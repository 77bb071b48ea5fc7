"""tw.tune: rank the strategies a modelled cluster allows for a tw.Graph, as `twinflow tune`
does for the built-in models: every (dp, tp, pp, micro-batches, schedule, vp, sp) the C++
enumeration gives (one list for both), each compiled and simulated, one that runs out of memory
tried again with zero=1 (dp > 1), then also recompute=full; ranked by simulated step time.

    report = tw.tune(step, x, labels, cluster="dgx-h100", nodes=1, options="precision=bf16")
    print(report); report.plot("tune.png"); step.compile(x, labels, strategy=report.best)

A ranking `twinflow tune --json FILE` wrote plots the same way:

    /usr/bin/python3 -m twinflow.tune FILE.json tune.png
"""
import json
import sys
import time

from . import _C

_ERRORS = (_C.InvalidArgumentError, _C.ShapeError, _C.SbpError, _C.PlanError, _C.TimeoutError,
           _C.OutOfMemoryError)


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


def _simulate(graph, examples, strategy, devices, cluster, nodes):
    """(report, why): the simulated step of `strategy`, or why it cannot run."""
    try:
        graph.compile(*examples, strategy=strategy, devices=devices)
        report = graph.simulate(cluster=cluster, nodes=nodes)
    except _ERRORS as e:
        return None, str(e).splitlines()[0]  # its whole first line, as `twinflow tune` keeps
    if report.out_of_memory:
        return report, f"out of memory ({report.peak_memory_bytes / 2**30:.2f} GiB)"
    return report, None


def _evaluate(graph, examples, candidate, options, devices, cluster, nodes):
    """The candidate's row; out of memory, tried again with zero=1 (dp > 1), then also
    recompute=full, keeping the first that fits."""
    text = candidate + ("," + options if options else "")
    report, why = _simulate(graph, examples, text, devices, cluster, nodes)
    dp_one = candidate.startswith("dp=1,")
    for extra in ("zero=1", "recompute=full"):
        if not (why or "").startswith("out of memory"):
            break
        # Neither where `options` already chose it; zero=1 only with data parallelism.
        if extra.split("=")[0] + "=" in options or (extra == "zero=1" and dp_one):
            continue
        text += "," + extra
        again, again_why = _simulate(graph, examples, text, devices, cluster, nodes)
        if again_why is None:
            report, why = again, None
        elif again_why.startswith("out of memory"):
            why += f", {again.peak_memory_bytes / 2**30:.2f} GiB with {extra}"
    if why is not None:
        return {"strategy": text, "fits": False, "why": why}
    return {"strategy": text, "fits": True, "step_s": report.step_s,
            "samples_per_s": report.samples_per_second, "mfu": report.mfu,
            "peak_bytes": report.peak_memory_bytes}


def tune(graph, *example_inputs, cluster="dgx-h100", nodes=None, max_micro_batches=8,
         options="", progress=True):
    """Ranks the strategies `cluster` x `nodes` allows for `graph` (a tw.Graph) on the example
    inputs (the whole batch), by simulated step time. options: strategy options every
    candidate keeps ("precision=bf16"). Ctrl-C stops after the candidate in progress and ranks
    those done. The graph is compiled back to its own strategy afterwards. Returns a
    TuneReport."""
    devices, per_node, capacity = _C.cluster_shape(cluster, nodes)
    candidates = _C.tune_candidates(devices, per_node, max_micro_batches)
    saved = dict(graph._options)
    rows, start, interrupted = [], time.monotonic(), False
    try:
        for i, candidate in enumerate(candidates):
            rows.append((i, _evaluate(graph, example_inputs, candidate, options, devices,
                                      cluster, nodes)))
            if progress:
                row = rows[-1][1]
                print(f"[{i + 1}/{len(candidates)}, {time.monotonic() - start:.1f} s] "
                      f"{row['strategy']}: " + (f"step {row['step_s'] * 1e3:.3f} ms"
                                                if row["fits"] else row["why"]), file=sys.stderr)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        graph.compile(**saved)
    rows.sort(key=lambda r: (not r[1]["fits"], r[1].get("step_s", 0.0), r[0]))
    ranked = [row for _, row in rows]
    for rank, row in enumerate((r for r in ranked if r["fits"]), start=1):
        row["rank"] = rank
    for row in ranked:
        row.setdefault("rank", None)
    return TuneReport(ranked, capacity, interrupted, time.monotonic() - start)


def _main(argv):
    if len(argv) != 2:
        print("usage: python3 -m twinflow.tune RANKING.json PLOT.png", file=sys.stderr)
        return 2
    TuneReport.from_json(argv[0]).plot(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
