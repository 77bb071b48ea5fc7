"""tw.tune: the ranking of the strategies a modelled cluster allows for a tw.Graph or a
built-in model, by the planner `twinflow tune` drives."""
import json
import pathlib
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

import twinflow as tw
tune_module = sys.modules["twinflow.tune"]  # the module, which tw.tune (the function) hides

from conftest import Mlp, TrainStep


# What the tuner reads of _graph() on _batch(): a batch of 16, no layers to stage, no decoder,
# and recomputation its modules' own.
_GRAPH_MODEL = (16, 0, False, False, False, False)


def _graph():
    model = Mlp(widths=(32, 64, 64, 8))
    return TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(strategy="dp=2")


def _batch():
    rng = np.random.default_rng(0)
    return (rng.uniform(-1, 1, (16, 32)).astype(np.float32),
            rng.integers(0, 8, 16).astype(np.int32))


def test_tune_ranks_every_candidate_by_simulated_step(tmp_path):
    step, (x, y) = _graph(), _batch()
    report = tw.tune(step, x, y, cluster="dgx-h100", max_micro_batches=2, progress=False)
    # A Python graph without set_stage or sequence-parallel pins: pp, vp and sp change nothing.
    candidates = tw._C.tune_candidates("dgx-h100", None, _GRAPH_MODEL, 2, pipeline=False,
                                        sequence_parallel=False)
    assert len(report.rows) == len(candidates) and not report.interrupted
    assert all(",pp=1," in r["strategy"] and "sp=" not in r["strategy"] for r in report.rows)
    ranked = report.ranked
    assert ranked and [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
    assert [r["step_s"] for r in ranked] == sorted(r["step_s"] for r in ranked)
    assert report.best == ranked[0]["strategy"]
    # The best, simulated on its own, gives the same step.
    step.compile(x, y, strategy=report.best, devices=8)
    assert step.simulate(cluster="dgx-h100").step_s == ranked[0]["step_s"]
    # The graph is back under its own strategy after tuning.
    again = _graph()
    tw.tune(again, x, y, cluster="dgx-h100", max_micro_batches=1, progress=False)
    assert again._options["strategy"] == "dp=2"
    path = tmp_path / "tune.png"
    report.plot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(report.to_json()) == report.rows


def test_ctrl_c_ranks_the_candidates_done(monkeypatch):
    step, (x, y) = _graph(), _batch()
    build = step._model
    calls = []

    everything = tw._C.tune_candidates("dgx-h100", None, _GRAPH_MODEL, 2, pipeline=False,
                                        sequence_parallel=False)
    # The screen builds one model per family (the candidates alike but for mb), evaluation one
    # per candidate: Ctrl-C while the second candidate's model is built.
    families = len({re.sub(r",mb=\d+", "", c) for c in everything})

    def interrupted_third(*args):
        calls.append(1)
        if len(calls) == families + 2:
            signal.raise_signal(signal.SIGINT)
        return build(*args)

    monkeypatch.setattr(step, "_model", interrupted_third)
    report = tw.tune(step, x, y, cluster="dgx-h100", max_micro_batches=2, progress=False)
    assert report.interrupted and 0 < len(report.rows) < len(everything)
    assert step._options["strategy"] == "dp=2"


def test_the_cli_and_tw_tune_rank_alike(tmp_path):
    """One planner behind both front ends: `twinflow tune --json` and tw.tune on the same GPT
    give the same rows, bit for bit where they rank."""
    sizes = dict(layers=2, hidden=64, heads=4, sequence=16, vocab=128, batch=16)
    cli = pathlib.Path(tw.__file__).resolve().parents[2] / "bin" / "twinflow"
    ranking = tmp_path / "cli.json"
    flags = [f"--{k}={v}" for k, v in sizes.items()]
    subprocess.run([str(cli), "tune", "--model", "gpt", *flags, "--cluster", "dgx-h100",
                    "--max-micro-batches", "2", "--jobs", "1", "--with", "precision=bf16",
                    "--json", str(ranking)], check=True, capture_output=True)
    rows = json.loads(ranking.read_text())
    report = tw.tune(tw.models.gpt(**sizes), cluster="dgx-h100", max_micro_batches=2,
                     options="precision=bf16", progress=False)
    assert [r for r in report.rows if r["fits"]] == [r for r in rows if r["fits"]]
    assert [(r["strategy"], r["verdict"]) for r in report.rows] == \
        [(r["strategy"], r["verdict"]) for r in rows]
    model = tw._C.builtin_extent("gpt", sizes)
    assert len(rows) == len(tw._C.tune_candidates("dgx-h100", None, model, 2,
                                                  options="precision=bf16"))
    # An LLM on GPUs with its attention left to the tuner is tuned with fused attention, and
    # both front ends try ZeRO-1 and recomputation as candidates of their own.
    assert any("zero=1" in r["strategy"] for r in rows)
    assert any("recompute=full" in r["strategy"] for r in rows)
    assert any(",pp=2," in r["strategy"] for r in report.ranked)


def test_the_cli_and_tw_tune_estimate_alike(tmp_path):
    """A llama with 6 layers and 64 micro-batches of one: both front ends estimate candidates
    from their proxies (planner/proxy_estimate.h) and re-simulate the top whole, alike."""
    sizes = dict(layers=6, hidden=256, heads=8, kv_heads=4, ffn=512, sequence=128, vocab=512,
                 batch=64)
    cli = pathlib.Path(tw.__file__).resolve().parents[2] / "bin" / "twinflow"
    ranking = tmp_path / "cli.json"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in sizes.items()]
    subprocess.run([str(cli), "tune", "--model", "llama", *flags, "--micro-batch-size", "1",
                    "--cluster", "dgx-h100", "--top", "3", "--jobs", "1", "--json", str(ranking)],
                   check=True, capture_output=True)
    rows = json.loads(ranking.read_text())
    report = tw.tune(tw.models.llama(**sizes), cluster="dgx-h100", micro_batch_size=1, top=3,
                     progress=False)
    assert report.rows == rows
    assert any(r.get("estimated") for r in rows)
    assert not any(r.get("estimated") for r in report.ranked[:3])


def test_a_cli_ranking_plots(tmp_path):
    ranking = tmp_path / "ranking.json"
    ranking.write_text(json.dumps([
        {"rank": 1, "strategy": "dp=8,tp=1,pp=1,mb=1", "fits": True, "step_s": 0.002,
         "samples_per_s": 8000.0, "mfu": 0.1, "peak_bytes": 2 << 30},
        {"rank": None, "strategy": "dp=1,tp=8,pp=1,mb=1", "fits": False, "why": "deadlocks"}]))
    png = tmp_path / "ranking.png"
    subprocess.run([sys.executable, "-m", "twinflow.tune", str(ranking), str(png)], check=True)
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert tw.TuneReport.from_json(str(ranking)).best == "dp=8,tp=1,pp=1,mb=1"


def test_an_unknown_cluster_is_named():
    step, (x, y) = _graph(), _batch()
    with pytest.raises(tw.InvalidArgumentError, match="unknown cluster 'nowhere'"):
        tw.tune(step, x, y, cluster="nowhere")
