"""Training through the Python API: every strategy gives the single-device losses, graphs
share parameters, checkpoints move between strategies, and the simulator reports."""
import json

import numpy as np
import pytest

import twinflow as tw
from conftest import Forward, Mlp, TrainStep, batches, train


@pytest.mark.parametrize("strategy", ["dp=2", "tp=2", "dp=2,tp=2", "pp=2,mb=4,schedule=1f1b",
                                      "pp=2,mb=2,schedule=gpipe", "dp=2,pp=2,mb=2"])
def test_strategies_match_one_device(strategy):
    reference, _, _ = train("auto", steps=5)
    losses, _, _ = train(strategy, steps=5)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    assert losses[-1] < losses[0]


def test_gradient_buckets_change_no_bit():
    # bucket=0: every gradient its own all-reduce; the default 25 MiB buckets sum the same
    # elements in the same order (docs/compiler.md#gradient-buckets).
    assert tw._C.parse_strategy("dp=2").bucket == 25
    assert tw._C.parse_strategy("dp=2,bucket=0").bucket == 0
    bucketed, _, _ = train("dp=2,tp=2", steps=4)
    alone, _, _ = train("dp=2,tp=2,bucket=0", steps=4)
    assert bucketed == alone


def test_interleaved_stages_match_one_device():
    # vp=2: four stages on two pipeline ranks (rank r holds stages r and r + 2), run in
    # Megatron's interleaved 1F1B order.
    widths = (12, 16, 16, 16, 5)
    reference, _, _ = train("auto", steps=5, widths=widths)
    tw.manual_seed(0)
    model = Mlp(widths=widths)
    for stage in range(4):
        model.body[2 * stage].set_stage(stage)
    opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = TrainStep(model, opt).compile(strategy="pp=2,vp=2,mb=4")
    assert tw._C.parse_strategy("pp=2,vp=2,mb=4").stages == 4
    losses = [step(x, y) for x, y in batches(5)]
    np.testing.assert_allclose(losses, reference, rtol=1e-5)


@pytest.mark.parametrize("strategy", ["dp=2,tp=2,precision=bf16", "dp=2,precision=bf16,grad_reduce=bf16",
                                      "pp=2,mb=2,precision=fp16"])
def test_mixed_precision_tracks_fp32(strategy):
    # docs/models.md#mixed-precision: within 2e-3 of the fp32 losses; parameters stay fp32.
    reference, _, _ = train("auto", steps=5)
    losses, model, _ = train(strategy, steps=5)
    np.testing.assert_allclose(losses, reference, rtol=2e-3)
    assert losses != reference  # it did compute in the low type
    assert losses[-1] < losses[0]
    assert all(v.dtype == np.float32 for v in model.state_dict().values())


def test_clipping_matches_one_device_and_clips():
    clipped = lambda p: tw.optim.SGD(p, lr=0.1, clip_grad=0.01)
    reference, _, _ = train("auto", steps=4, optimizer=clipped)
    losses, _, _ = train("dp=2,tp=2", steps=4, optimizer=clipped)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    free, _, _ = train("auto", steps=4, optimizer=lambda p: tw.optim.SGD(p, lr=0.1))
    assert free != reference  # the threshold did clip


def test_a_schedule_equals_setting_the_rate_each_step():
    # The graph's cosine schedule (warmup 2, decay to step 6) against a constant schedule whose
    # rate Python sets before every step to the same formula: the same losses.
    def rate(step, base=0.1, warmup=2, decay_steps=6, min_lr=0.01):
        if step < warmup:
            return base * step / warmup
        progress = min(1.0, (step - warmup) / (decay_steps - warmup))
        return min_lr + (base - min_lr) * 0.5 * (1 + np.cos(np.pi * progress))

    cosine = lambda p: tw.optim.SGD(p, lr=0.1, momentum=0.9, schedule="cosine", warmup=2,
                                    decay_steps=6, min_lr=0.01)
    scheduled, _, _ = train("dp=2,tp=2", steps=8, optimizer=cosine)
    tw.manual_seed(0)
    model = Mlp()
    opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.body[2].set_stage(1)  # as train() places a 2-stage pipeline
    step = TrainStep(model, opt).compile(strategy="pp=2,mb=2")
    by_hand = []
    for s, (x, y) in enumerate(batches(8)):
        opt.param_groups[0]["lr"] = rate(s)
        by_hand.append(step(x, y))
    np.testing.assert_allclose(by_hand, scheduled, rtol=1e-5)
    with pytest.raises(tw.InvalidArgumentError, match="lr"):
        opt.param_groups[0]["lr"] = -1
        step(*batches(1)[0])
    with pytest.raises(tw.InvalidArgumentError, match="schedule"):
        tw.optim.AdamW(model.parameters(), schedule="step")
    with pytest.raises(tw.InvalidArgumentError, match="decay_steps"):
        tw.optim.AdamW(model.parameters(), schedule="cosine", warmup=10, decay_steps=5)


def test_two_runs_are_bit_identical():
    a, _, _ = train("dp=2,tp=2", steps=3)
    b, _, _ = train("dp=2,tp=2", steps=3)
    assert a == b


def test_adam_matches_one_device():
    adam = lambda p: tw.optim.Adam(p, lr=1e-2)
    reference, _, _ = train("auto", steps=4, optimizer=adam)
    losses, _, _ = train("dp=2,tp=2", steps=4, optimizer=adam)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)


def test_an_inference_graph_sees_the_trained_parameters():
    _, model, _ = train("dp=2,tp=2", steps=3)
    state = model.state_dict()  # fetched from the training graph's runner
    x = batches(1)[0][0]
    h = x
    for i, idx in enumerate([0, 2, 4]):
        h = h @ state[f"body.{idx}.weight"] + state[f"body.{idx}.bias"]
        h = np.maximum(h, 0) if i < 2 else h
    np.testing.assert_allclose(Forward(model).compile(strategy="tp=2")(x), h, rtol=1e-4, atol=1e-5)


def test_set_parameters_reach_the_next_step():
    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(strategy="tp=2")
    x, y = batches(1)[0]
    step(x, y)
    for p in model.parameters():
        p.copy_(np.zeros(p.shape))
    # All-zero weights: uniform logits over 5 classes.
    assert step(x, y) == pytest.approx(np.log(5), rel=1e-6)


def test_pipeline_stages_set_by_hand():
    class Staged(Mlp):
        def __init__(self):
            super().__init__(parallel=False)
            self.body[2].set_stage(1)

    tw.manual_seed(0)
    reference, _, _ = train("auto", steps=3, parallel=False)
    tw.manual_seed(0)
    model = Staged()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    step.compile(strategy="pp=2,mb=2")
    losses = [step(x, y) for x, y in batches(3)]
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    devices = {d["device"] for d in step.memory()}
    assert devices == {"cpu:0", "cpu:1"}


def test_pinned_layouts_show_in_explain():
    tw.manual_seed(0)
    model = Mlp(parallel=False)
    model.body[0].to_global(sbp=tw.sbp.split(1))
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
    step.compile(*batches(1)[0], strategy="auto", devices=2)
    explanation = step.explain()
    weight = next(s for s in explanation.signatures if s["op"] == "model.body.0.weight")
    assert "S(1)" in weight["signature"]
    assert "signatures" in str(explanation) and explanation.boxings


def test_checkpoint_moves_between_strategies(tmp_path):
    data = batches(6)
    tw.manual_seed(0)
    model = Mlp()
    opt = lambda m: tw.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    uninterrupted = TrainStep(model, opt(model)).compile(strategy="auto")
    expected = [uninterrupted(x, y) for x, y in data]

    tw.manual_seed(0)
    first = Mlp()
    step = TrainStep(first, opt(first)).compile(strategy="dp=2")
    for x, y in data[:3]:
        step(x, y)
    step.save(str(tmp_path))
    tw.manual_seed(7)  # different initial values: the checkpoint must replace them
    second = Mlp()
    second.body[2].set_stage(1)
    resumed = TrainStep(second, opt(second)).compile(*data[0], strategy="tp=2,pp=2,mb=2")
    assert resumed.load(str(tmp_path)) == 3
    losses = [resumed(x, y) for x, y in data[3:]]
    np.testing.assert_allclose(losses, expected[3:], rtol=1e-5)

    (tmp_path / "checkpoint.twck").write_bytes((tmp_path / "checkpoint.twck").read_bytes()[:-9])
    with pytest.raises(tw.InvalidArgumentError, match="checkpoint"):
        resumed.load(str(tmp_path))


def test_simulate_reports_and_traces(tmp_path):
    _, _, step = train("dp=2,tp=2", steps=1)
    report = step.simulate(cluster="dgx-h100", nodes=1, trace=True)
    assert report.step_s > 0 and 0 < report.mfu < 1 and report.samples_per_second > 0
    assert [d["device"] for d in report.devices] == [f"gpu:{i}" for i in range(4)]
    assert not report.out_of_memory and report.peak_memory_bytes > 0
    path = tmp_path / "trace.json"
    report.to_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    report.to_perfetto_trace(str(tmp_path / "trace.pftrace"))
    assert b"gpu:3" in (tmp_path / "trace.pftrace").read_bytes()
    again = step.simulate(cluster="dgx-h100", nodes=1, trace=True)
    assert again.to_json() == report.to_json() and again._trace == report._trace
    assert again._perfetto == report._perfetto
    assert "step time" in str(report)


def test_simulated_oom_names_the_devices():
    report = tw.models.gpt(preset="gpt3-175b", strategy="dp=1,tp=8,pp=2", layers=2).simulate(
        cluster="dgx-h100", nodes=2)
    assert report.out_of_memory and report.peak_memory_bytes > report.memory_capacity


def test_simulation_needs_known_shapes_and_a_real_cluster():
    step = Forward(Mlp())
    with pytest.raises(tw.InvalidArgumentError, match="example inputs"):
        step.simulate()
    step.compile(np.zeros((8, 12), np.float32), strategy="dp=2")
    with pytest.raises(tw.InvalidArgumentError, match="unknown cluster 'nowhere'"):
        step.simulate(cluster="nowhere")


def test_llama_presets_fit_as_the_published_runs_did():
    # Llama 2 70B on 64 H100s as tp=8, pp=8 in bf16 with full recomputation, two layers per
    # stage simulated for speed: the memory plan names every category and fits in 80 GB.
    model = tw.models.llama(preset="llama2-70b", strategy="tp=8,pp=2,mb=8,precision=bf16,recompute=full",
                            layers=2, batch=8, attention="fused")
    report = model.memory(cluster="dgx-h100", nodes=2)
    assert 0 < report.peak_bytes_per_device < 80e9
    with pytest.raises(tw.InvalidArgumentError, match="llama2-7b"):
        tw.models.llama(preset="llama9").explain()
    with pytest.raises(tw.InvalidArgumentError, match="is a gpt model"):
        tw.models.llama(preset="gpt3-175b").explain()


def test_builtin_models_refuse_unknown_sizes():
    with pytest.raises(tw.InvalidArgumentError, match="layer"):
        tw.models.gpt(layer=4)
    with pytest.raises(tw.InvalidArgumentError, match="preset"):
        tw.models.gpt(preset="gpt5").explain()


@pytest.mark.parametrize("strategy", ["auto", "dp=2,tp=2", "pp=2,mb=4,schedule=1f1b"])
def test_recomputed_modules_give_the_same_losses(strategy):
    reference, _, _ = train(strategy, steps=4)
    tw.manual_seed(0)
    model = Mlp()
    if strategy.startswith("pp=2"):
        model.body[2].set_stage(1)  # where train() places the second stage
    model.body.recompute()  # the whole body, one segment: its forward runs again when needed
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    step.compile(strategy=strategy)
    losses = [step(x, y) for x, y in batches(4)]
    np.testing.assert_allclose(losses, reference, rtol=1e-6)  # gradients unchanged
    recomputed = [s["op"] for s in step.explain().signatures if s["op"].endswith("/recompute")]
    assert any(op.startswith("matmul") for op in recomputed), recomputed
    _, _, plain = train(strategy, steps=1)
    assert not any(s["op"].endswith("/recompute") for s in plain.explain().signatures)


def test_recompute_is_a_module_setting_not_a_strategy_field():
    with pytest.raises(tw.InvalidArgumentError, match="Module.recompute"):
        TrainStep(Mlp(), tw.optim.SGD(Mlp().parameters(), lr=0.1)).compile(strategy="dp=2,recompute=full")


@pytest.mark.parametrize("optimizer", [lambda p: tw.optim.SGD(p, lr=0.1, momentum=0.9),
                                       lambda p: tw.optim.Adam(p, lr=1e-2)])
def test_recompiling_keeps_the_trained_state(optimizer):
    data = batches(6)
    expected, _, _ = train("auto", steps=6, optimizer=optimizer)

    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, optimizer(model.parameters())).compile(strategy="dp=2")
    forward = Forward(model).compile(strategy="tp=2")
    losses = [step(x, y) for x, y in data[:3]]
    forward(data[0][0])  # the inference graph's runner now holds the weights of step 3
    step.compile(strategy="tp=2,mb=2")  # another strategy: a new Plan and runner
    assert step.steps_done == 3
    losses += [step(x, y) for x, y in data[3:]]
    # Momentum (or Adam's moments and step count) came along: the uninterrupted losses.
    np.testing.assert_allclose(losses, expected, rtol=1e-5)

    # The graph sharing the model still runs, with the weights of step 6.
    state = model.state_dict()
    h = data[0][0]
    for i, idx in enumerate([0, 2, 4]):
        h = h @ state[f"body.{idx}.weight"] + state[f"body.{idx}.bias"]
        h = np.maximum(h, 0) if i < 2 else h
    np.testing.assert_allclose(forward(data[0][0]), h, rtol=1e-4, atol=1e-5)
    step.compile(strategy="dp=2")  # the same strategy again, and without new examples
    x, y = batches(7)[6]
    _, _, reference = train("auto", steps=6, optimizer=optimizer)
    assert step(x, y) == pytest.approx(reference(x, y), rel=1e-5)


def test_memory_is_the_plans_arena_split_by_category():
    model = tw.models.gpt(strategy="dp=2,tp=2", layers=2, hidden=64, heads=4, sequence=16,
                          vocab=128, batch=8)
    memory = model.memory(cluster="dgx-h100", nodes=1)
    assert memory.optimizer.startswith("adamw:"), memory.optimizer  # the GPT's default
    report = model.simulate(cluster="dgx-h100", nodes=1)
    assert [d["arena_bytes"] for d in memory] == [d["arena_bytes"] for d in report.devices]
    assert memory.peak_bytes_per_device == report.peak_memory_bytes
    for d in memory:
        assert sum(d["categories"].values()) == d["peak_bytes"] <= d["arena_bytes"]
        assert d["categories"]["optimizer state"] > 0 and d["categories"]["gradients"] > 0
    sgd = tw.models.gpt(strategy="dp=2", layers=1, hidden=32, heads=2, sequence=8, vocab=64,
                        batch=4, optimizer="sgd").memory(cluster="dgx-h100", nodes=1)
    assert sgd.optimizer.startswith("sgd:") and "optimizer sgd:" in str(sgd)
    assert all(d["categories"]["optimizer state"] == 0 for d in sgd)


def test_fused_attention_saves_the_score_memory():
    sizes = dict(layers=1, hidden=32, heads=4, sequence=512, vocab=64, batch=4)
    unfused = tw.models.gpt(strategy="dp=2,tp=2", **sizes).memory(cluster="dgx-h100", nodes=1)
    fused = tw.models.gpt(strategy="dp=2,tp=2", attention="fused", **sizes).memory(
        cluster="dgx-h100", nodes=1)
    assert fused.peak_bytes_per_device < unfused.peak_bytes_per_device / 2
    with pytest.raises(tw.InvalidArgumentError, match="attention must be unfused or fused"):
        tw.models.gpt(attention="flash", **sizes).explain()


def test_cuda_models_compile_and_explain_without_a_gpu():
    model = tw.models.gpt(strategy="dp=2,tp=2", device="cuda", attention="fused", layers=1,
                          hidden=32, heads=4, sequence=16, vocab=64, batch=4)
    assert "cuda:0-3" in str(model.explain())
    assert str(tw.placement("cuda", 4, [2, 2])) == "cuda:0-3 [2,2]"
    with pytest.raises(tw.InvalidArgumentError, match="unknown device type 'tpu'"):
        tw.models.mlp(device="tpu", widths=(4, 8, 2), batch=4).explain()


def test_a_failed_compile_stops_training_until_one_succeeds():
    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
    x, labels = batches(1)[0]
    step.compile(strategy="dp=2")
    step(x, labels)
    with pytest.raises(tw.InvalidArgumentError):
        step.compile(strategy="bogus=1")
    with pytest.raises(tw.InvalidArgumentError, match="last compile"):
        step(x, labels)
    step.compile(strategy="dp=2")
    assert np.isfinite(step(x, labels))


def test_an_empty_batch_is_refused():
    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(tw.InvalidArgumentError, match="empty batch"):
        step(np.zeros((0, 12), np.float32), np.zeros((0,), np.int64))
