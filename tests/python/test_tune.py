"""tw.tune: the ranking of the strategies a modelled cluster allows for a tw.Graph."""
import json
import subprocess
import sys

import numpy as np
import pytest

import twinflow as tw
tune_module = sys.modules["twinflow.tune"]  # the module, which tw.tune (the function) hides

from conftest import Mlp, TrainStep


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
    candidates = tw._C.tune_candidates(8, 8, 2)
    assert len(report.rows) == len(candidates) and not report.interrupted
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
    evaluate = tune_module._evaluate
    calls = []

    def interrupted_third(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return evaluate(*args)

    monkeypatch.setattr(tune_module, "_evaluate", interrupted_third)
    report = tw.tune(step, x, y, cluster="dgx-h100", max_micro_batches=2, progress=False)
    assert report.interrupted and len(report.rows) == 2
    assert step._options["strategy"] == "dp=2"


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
