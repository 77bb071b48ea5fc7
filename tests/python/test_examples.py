"""The examples, run as a user runs them (and under mpirun), with the figures they promise."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none")
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH", "-np", "2"]


def run(args, mpi=False, timeout=300):
    command = (MPIRUN if mpi else []) + [sys.executable] + args
    done = subprocess.run(command, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("mpi", [False, True])
def test_mlp_digits_reaches_95_percent(mpi):
    out = run(["examples/mlp_digits.py"], mpi)
    accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", out).group(1))
    assert accuracy >= 0.95, out
    assert f"on {2 if mpi else 1} rank(s)" in out
    print(out)


@pytest.mark.parametrize("mpi", [False, True])
def test_char_gpt_loss_falls(mpi):
    out = run(["examples/char_gpt.py"], mpi)
    first, last = map(float, re.search(r"loss ([0-9.]+) -> ([0-9.]+)", out).groups())
    assert last < 0.7 * first, out
    print(out)


def test_mpi_and_in_process_runs_give_the_same_losses():
    args = ["examples/mlp_digits.py", "--epochs", "2", "--target", "0"]
    losses = lambda out: re.findall(r"loss ([0-9.]+)", out)
    assert losses(run(args)) == losses(run(args, mpi=True))


def test_simulate_gpt3_prints_the_table_and_plots(tmp_path):
    plot = tmp_path / "gpt3.png"
    out = run(["examples/simulate_gpt3.py", "--plot", str(plot)])
    rows = re.findall(r"^(dp=\d+,tp=\d+,pp=\d+\S*)\s+([0-9.]+)s", out, re.M)
    assert len(rows) == 4, out
    times = [float(t) for _, t in rows]
    assert times == sorted(times) and times[0] > 0
    assert plot.stat().st_size > 10000 and plot.read_bytes()[:4] == b"\x89PNG"
    print(out)


def test_local_shards_and_the_global_batch_give_the_in_process_losses(tmp_path):
    """feed="local" under mpirun (each rank its rows) and feed="global" (each rank the whole
    batch) train as one process on the whole batch does; the whole batch fed under "local"
    is refused, naming the feed, both shapes and the mode."""
    script = ["tests/python/feed_shards.py"]
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    run(script + [str(tmp_path / "one")])
    run(script + [str(tmp_path / "two")], mpi=True)
    alone = (tmp_path / "one" / "rank0.txt").read_text()
    ranks = [(tmp_path / "two" / f"rank{r}.txt").read_text() for r in (0, 1)]
    losses = lambda out, mode: re.search(rf"^{mode} (.*)$", out, re.M).group(1)
    assert losses(alone, "local") == losses(alone, "global"), alone
    assert "shapes [('labels', (8,)), ('x', (8, 12))]" in alone
    for rank, out in enumerate(ranks):
        assert losses(out, "local") == losses(out, "global") == losses(alone, "local"), alone + out
        assert "shapes [('labels', (4,)), ('x', (4, 12))]" in out, out
        assert (f"refused ShapeError: feed 'x' is f32[8,12], feed=local expects f32[4,12] on rank "
                f"{rank} (rows {4 * rank}:{4 * rank + 4} of the batch of 8)") in out, out
        assert ("first step from a shard refused InvalidArgumentError: feed='local' under mpirun: "
                "input 'x' of shape [4, 12] was taken as the whole batch, but this rank passes "
                "[2, 12] of it") in out, out


def test_torchrun_environment_without_mpirun_is_refused():
    env = dict(ENV, RANK="0", WORLD_SIZE="2", LOCAL_RANK="0")
    done = subprocess.run([sys.executable, "tests/python/feed_shards.py"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "ValueError" in done.stderr or "InvalidArgumentError" in done.stderr, done.stderr
    assert "WORLD_SIZE=2" in done.stderr and "launch with mpirun" in done.stderr, done.stderr
