"""The API's surface: placements, SBP, tensors, modules, numpy round trips and bad input."""
import numpy as np
import pytest

import twinflow as tw
from conftest import Forward, Mlp, TrainStep, batches


def test_placement_and_sbp_text():
    p = tw.placement("cpu", 4, [2, 2])
    assert str(p) == "cpu:0-3 [2,2]" and p.ndim == 2 and len(p) == 4
    assert str(tw.placement("cpu", [2, 3])) == "cpu:2-3 [2]"
    assert str(tw.sbp.split(1)) == "S(1)" and str(tw.sbp.broadcast) == "B"
    assert str(tw.sbp.partial_sum) == "P"
    assert tw.sbp.nd_text((tw.sbp.split(0), tw.sbp.broadcast), 2, "t") == "(S(0),B)"


@pytest.mark.parametrize("make, error", [
    (lambda: tw.placement("cpu", 4, [3]), tw.SbpError),
    (lambda: tw.placement("tpu", 2), tw.InvalidArgumentError),
    (lambda: tw.placement("cpu", []), tw.InvalidArgumentError),
    (lambda: tw.sbp.split(-1), tw.InvalidArgumentError),
    (lambda: tw.sbp.nd_text(tw.sbp.split(0), 2, "x"), tw.InvalidArgumentError),
    (lambda: tw.nn.Linear(0, 3), tw.InvalidArgumentError),
    (lambda: tw.nn.Linear(2, 3, parallel="diagonal"), tw.InvalidArgumentError),
    (lambda: tw.nn.Dropout(1.5), tw.InvalidArgumentError),
    (lambda: tw.optim.SGD([], lr=0.1), tw.InvalidArgumentError),
    (lambda: tw.optim.SGD(Mlp().parameters(), lr=-1), tw.InvalidArgumentError),
    (lambda: tw.tensor([1, 2], dtype="f16"), tw.InvalidArgumentError),
])
def test_bad_arguments_raise_named_errors(make, error):
    with pytest.raises(error):
        make()


def test_error_classes_map_to_value_and_runtime_errors():
    assert issubclass(tw.InvalidArgumentError, ValueError)
    assert issubclass(tw.ShapeError, ValueError) and issubclass(tw.SbpError, ValueError)
    for cls in (tw.PlanError, tw.CommError, tw.TimeoutError, tw.OutOfMemoryError):
        assert issubclass(cls, RuntimeError)


class Echo(tw.Graph):
    def build(self, x):
        return x * 1.0 if x.dtype in ("f32", "f64") else x.reshape(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("strategy", ["auto", "dp=2"])
def test_numpy_round_trip_through_the_runtime(dtype, strategy):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 5)) * 100).astype(dtype)
    out = Echo().compile(strategy=strategy)(x)
    expected = x if x.dtype.kind == "f" else x.reshape(-1)
    assert out.dtype == dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


class Indexing(tw.Graph):
    def build(self, x):
        # A power, slices with negative bounds, an int that drops an axis, ... and silu.
        return x[:, 1:-1] ** 2 + tw.nn.functional.silu(x[..., 1:3]) * x[0, 2]


@pytest.mark.parametrize("strategy", ["auto", "dp=2"])
def test_power_slicing_and_silu_match_numpy(strategy):
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    silu = lambda v: v / (1 + np.exp(-v))
    want = x[:, 1:-1] ** 2 + silu(x[..., 1:3]) * x[0, 2]
    np.testing.assert_allclose(Indexing().compile(strategy=strategy)(x), want, rtol=1e-5, atol=1e-6)


class LlamaPieces(tw.Graph):
    """RMSNorm, then rotary positions on 2 heads of 4 (Llama's q and k)."""

    def __init__(self):
        super().__init__()
        self.norm = tw.nn.RMSNorm(8, eps=1e-6)
        self.rotary = tw.nn.RotaryEmbedding(4, theta=100.0)

    def build(self, x):
        return self.rotary(self.norm(x))


def _numpy_rotary(x, head_dim, theta):
    half = head_dim // 2
    angles = np.arange(x.shape[1])[:, None] * theta ** (-2.0 * np.arange(half) / head_dim)
    cos, sin = np.cos(angles)[None, :, None, :], np.sin(angles)[None, :, None, :]
    heads = x.reshape(x.shape[0], x.shape[1], -1, head_dim)
    a, c = heads[..., :half], heads[..., half:]
    return np.concatenate([a * cos - c * sin, c * cos + a * sin], -1).reshape(x.shape)


@pytest.mark.parametrize("strategy", ["auto", "dp=2"])
def test_rms_norm_and_rotary_match_numpy(strategy):
    x = np.random.default_rng(3).standard_normal((2, 5, 8)).astype(np.float32)
    normed = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    want = _numpy_rotary(normed, 4, 100.0)
    np.testing.assert_allclose(LlamaPieces().compile(strategy=strategy)(x), want, rtol=1e-5, atol=1e-5)


class GroupedAttention(tw.Graph):
    def __init__(self, fused, kv_heads=2):
        super().__init__()
        self.fused, self.kv_heads = fused, kv_heads

    def build(self, q, k, v):
        return tw.nn.functional.causal_self_attention(q, k, v, heads=4, kv_heads=self.kv_heads,
                                                      fused=self.fused)


def test_grouped_query_attention_shares_key_value_heads():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 6, 8)).astype(np.float32)
    k, v = (rng.standard_normal((2, 6, 4)).astype(np.float32) for _ in range(2))
    # The reference repeats each key-value head for its two query heads.
    repeat = lambda t: np.repeat(t.reshape(2, 6, 2, 2), 2, axis=2).reshape(2, 6, 8)
    heads = lambda t: t.reshape(2, 6, 4, 2).transpose(0, 2, 1, 3)
    scores = heads(q) @ heads(repeat(k)).transpose(0, 1, 3, 2) / np.sqrt(2)
    scores = np.where(np.tril(np.ones((6, 6), bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    want = (probs / probs.sum(-1, keepdims=True) @ heads(repeat(v))).transpose(0, 2, 1, 3).reshape(2, 6, 8)
    for fused in (False, True):
        got = GroupedAttention(fused).compile(strategy="auto")(q, k, v)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(tw.InvalidArgumentError, match="kv_heads"):
        GroupedAttention(False, kv_heads=0).compile(strategy="auto")(q, k, v)
    with pytest.raises(tw.ShapeError, match="key-value heads"):
        GroupedAttention(False, kv_heads=3).compile(strategy="auto")(q, k, v)


@pytest.mark.parametrize("index, error", [((0, 0, 0), tw.ShapeError), ((slice(0, 4, 2),), tw.InvalidArgumentError),
                                          ((9,), tw.ShapeError), (("a",), tw.InvalidArgumentError)])
def test_bad_indices_name_the_axis(index, error):
    class Bad(tw.Graph):
        def build(self, x):
            return x[index]
    with pytest.raises(error):
        Bad().compile(strategy="auto")(np.zeros((4, 4), np.float32))


def test_tensor_objects_carry_layout():
    t = tw.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype == "f32" and t.shape == (2, 2) and not t.is_global
    g = t.to_global(tw.placement("cpu", 2), tw.sbp.split(0))
    assert g.is_global and str(g.sbp) == "S(0)"
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    assert tw.tensor([1, 2]).dtype == "i32"


def test_forward_matches_numpy_from_the_state_dict():
    tw.manual_seed(5)
    model = Mlp(parallel=False)
    x = np.random.default_rng(2).uniform(-1, 1, (8, 12)).astype(np.float32)
    state = model.state_dict()
    h = x
    for i, idx in enumerate([0, 2, 4]):
        h = h @ state[f"body.{idx}.weight"] + state[f"body.{idx}.bias"]
        if i < 2:
            h = np.maximum(h, 0)
    for strategy in ("auto", "dp=2,tp=2"):
        np.testing.assert_allclose(Forward(model).compile(strategy=strategy)(x), h, rtol=1e-5, atol=1e-6)


def test_parameters_and_state_dict():
    model = Mlp()
    names = [n for n, _ in model.named_parameters()]
    assert names == ["body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias",
                     "body.4.weight", "body.4.bias"]
    state = {k: v + 1 for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    np.testing.assert_array_equal(model.body[0].weight.numpy(), state["body.0.weight"])
    with pytest.raises(tw.InvalidArgumentError, match="missing"):
        model.load_state_dict({})
    with pytest.raises(tw.ShapeError):
        model.body[0].weight.copy_(np.zeros((2, 2)))


def test_bad_steps_name_the_input():
    graph = Forward(Mlp()).compile(strategy="auto")
    graph(np.zeros((8, 12), np.float32))
    with pytest.raises(tw.ShapeError, match="feed 'x'"):
        graph(np.zeros((8, 11), np.float32))
    with pytest.raises(tw.InvalidArgumentError, match="1 inputs, got 2"):
        graph(np.zeros((8, 12)), np.zeros(8))


def test_bad_graphs_name_the_layer_or_op():
    class Wrong(tw.Graph):
        def __init__(self):
            super().__init__()
            self.layer = tw.nn.Linear(3, 4)

        def build(self, x):
            return self.layer(x)

    with pytest.raises(tw.ShapeError, match="Linear"):
        Wrong()(np.zeros((2, 5), np.float32))

    class BadOp(tw.Graph):
        def build(self, x, y):
            return x @ y

    with pytest.raises(tw.ShapeError, match="matmul"):
        BadOp()(np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32))

    class FloatLabels(tw.Graph):
        def build(self, x, y):
            return tw.nn.CrossEntropyLoss()(x, y)

    with pytest.raises(tw.InvalidArgumentError, match="labels must be integers"):
        FloatLabels()(np.zeros((2, 3), np.float32), np.zeros(2, np.float32))


def test_modules_outside_a_graph_are_refused():
    with pytest.raises(tw.InvalidArgumentError, match="inside a tw.Graph"):
        tw.nn.ReLU()(np.zeros(3))


@pytest.mark.parametrize("strategy", ["dp=0", "dp=2,dp=2", "zz=2", "schedule=fast", "dp=x", 4, None])
def test_bad_strategies(strategy):
    with pytest.raises(tw.InvalidArgumentError, match="strategy"):
        Forward(Mlp()).compile(strategy=strategy)


@pytest.mark.parametrize("options, match", [
    (dict(strategy="dp=2", devices=3), "needs dp"),
    (dict(devices=0), "devices"),
    (dict(devices="4"), "devices"),
    (dict(placement="cpu:0-1"), "tw.placement"),
    (dict(strategy="dp=2", placement=tw.placement("cpu", 2)), "auto"),
    (dict(search="fastest"), "search"),
    (dict(devices=(1 << 20) + 1), "devices"),  # the CLI's --devices bound
    (dict(memory_limit=0), "memory_limit"),
    (dict(memory_limit=-1e9), "memory_limit"),
    (dict(memory_limit=float("nan")), "memory_limit"),
    (dict(memory_limit=float("inf")), "memory_limit"),
    (dict(memory_limit="8GiB"), "memory_limit"),
])
def test_bad_compile_options(options, match):
    with pytest.raises(tw.InvalidArgumentError, match=match):
        Forward(Mlp()).compile(**options)


def test_a_pipeline_needs_stages_set_by_set_stage():
    # Without set_stage every op would sit on stage 0: pp=2 would silently run on one device.
    x, y = batches(1)[0]
    model = Mlp()
    with pytest.raises(tw.InvalidArgumentError, match="set_stage"):
        TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(x, y, strategy="pp=2,mb=2")
    model.body[2].set_stage(1)
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(x, y, strategy="pp=2,mb=2")
    # memory() labels each device by its stage.
    assert sorted((d["device"], d["stage"]) for d in step.memory()) == [("cpu:0", 0), ("cpu:1", 1)]


def test_strategies_use_the_cpp_parser_and_its_rules():
    from twinflow.strategy import StrategyLayout
    layout = StrategyLayout("tp=2", devices=4)  # dp inferred, as the CLI does
    assert (layout.dp, layout.tp, layout.devices) == (2, 2, 4)
    assert str(layout.placement) == "cpu:0-3 [2,2]"
    assert StrategyLayout("dp=2,tp=2").devices == 4  # devices from the degrees
    auto_tp = StrategyLayout("dp=2,tp=auto", devices=8)
    assert auto_tp.tp == 4 and auto_tp.default_input_pin() == ("(S(0),B)", [1])
    for text, message in [("pp=auto", "'pp' cannot be auto"), ("dp=auto,tp=auto", "both auto"),
                          ("tq=2", "unknown strategy field 'tq'")]:
        with pytest.raises(tw.InvalidArgumentError, match=message):
            StrategyLayout(text)
    with pytest.raises(tw.InvalidArgumentError, match="cannot infer dp"):
        StrategyLayout("tp=3", devices=8)


def test_tp_auto_trains_to_the_single_device_losses():
    from conftest import train
    reference, _, _ = train("auto", steps=3)
    losses, _, _ = train("dp=2,tp=auto", steps=3, devices=4)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)


def test_batch_must_split_into_micro_batches():
    graph = Forward(Mlp()).compile(strategy="pp=1,mb=3")
    with pytest.raises(tw.InvalidArgumentError, match="mb=3"):
        graph(np.zeros((8, 12), np.float32))


def test_layouts_of_inputs_and_tensors_are_honoured():
    class Move(tw.Graph):
        def build(self, x):
            y = x.to_global(tw.placement("cpu", [2, 3]), tw.sbp.split(1))
            return y * 2.0

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    graph = Move().compile(tw.tensor(x).to_global(tw.placement("cpu", 2), tw.sbp.split(0)),
                           strategy="auto", devices=2)
    np.testing.assert_array_equal(graph(x), 2 * x)
    signatures = {s["op"]: s for s in graph.explain().signatures}
    assert signatures["x"]["signature"].endswith("S(0)")
    moved = [s for s in signatures.values() if s["type"] == "identity"]
    assert moved and moved[0]["placement"] == "cpu:2-3 [2]" and moved[0]["signature"].endswith("S(1)")
    assert {d["device"] for d in graph.memory()} == {"cpu:0", "cpu:1", "cpu:2", "cpu:3"}


def test_build_must_return_graph_tensors():
    class Numbers(tw.Graph):
        def build(self, x):
            return 3

    with pytest.raises(tw.InvalidArgumentError, match="got 3"):
        Numbers()(np.zeros(2, np.float32))


def test_an_input_on_its_own_placement():
    class Twice(tw.Graph):
        def build(self, x):
            return x * 2.0

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = Twice().compile(tw.tensor(x).to_global(tw.placement("cpu", [2, 3]), tw.sbp.split(0)),
                        strategy="auto", devices=2)
    np.testing.assert_array_equal(g(x), 2 * x)
    placements = {s["op"]: s["placement"] for s in g.explain().signatures}
    assert placements["x"] == "cpu:2-3 [2]" and placements[g.explain().signatures[-1]["op"]] == "cpu:0-1 [2]"


def test_feed_shapes_in_one_process_are_the_whole_batch():
    # One process holds every device: feed="local" is the whole batch, micro-batches stacked.
    (x, labels), = batches(1)
    for strategy in ("dp=2", "dp=2,mb=2"):
        model = Mlp()
        step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
        step.compile(x, labels, strategy=strategy)
        assert step.feed_shapes() == {"x": (8, 12), "labels": (8,)}
        mb = 2 if "mb" in strategy else 1
        assert step.feed_rows() == {"x": (0, 8 // mb), "labels": (0, 8 // mb)}
    with pytest.raises(tw.ShapeError, match=r"feed 'x' is f32\[4,12\], feed=local expects "
                                            r"f32\[8,12\] on rank 0 \(the whole batch\)"):
        step(x[:4], labels)
    with pytest.raises(tw.InvalidArgumentError, match="feed must be local or global"):
        step.compile(strategy="dp=2", feed="shard")


def test_float64_and_lists_are_converted_or_refused_with_what_to_pass():
    tw.manual_seed(0)
    graph = Forward(Mlp(parallel=False)).compile(tw.TensorSpec((8, 12), "f32"))
    x = np.random.default_rng(4).uniform(-1, 1, (8, 12)).astype(np.float32)
    want = graph(x)
    # No dtype of its own: a list takes the input's dtype (as torch.tensor takes float32).
    np.testing.assert_array_equal(graph(x.tolist()), want)
    # Integers a float32 holds exactly convert; float64 does not narrow silently.
    np.testing.assert_array_equal(graph(np.ones((8, 12), np.int64)),
                                  graph(np.ones((8, 12), np.float32)))
    with pytest.raises(tw.InvalidArgumentError,
                       match=r"input 'x' expects float32 \[8, 12\]; got float64: pass "
                             r"x.astype\(np.float32\)"):
        graph(x.astype(np.float64))
    with pytest.raises(tw.InvalidArgumentError, match="int64 values that float32 cannot hold"):
        graph(np.full((8, 12), 2**24 + 1, np.int64))

    class Loss(tw.Graph):
        def build(self, logits, labels):
            return tw.nn.CrossEntropyLoss()(logits, labels)

    loss = Loss().compile(tw.TensorSpec((2, 3), "f32"), tw.TensorSpec((2,), "i32"))
    logits = [[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]
    expected = loss(np.array(logits, np.float32), np.array([2, 0], np.int32))
    assert loss(logits, [2, 0]) == expected
    assert loss(np.array(logits, np.float32), np.array([2, 0], np.int64)) == expected
    with pytest.raises(tw.InvalidArgumentError, match=r"input 'labels' expects int32 \[2\]; "
                                                      r"got floating-point values"):
        loss(logits, [2.0, 0.0])
    with pytest.raises(tw.InvalidArgumentError, match="int32 cannot hold exactly"):
        loss(logits, np.array([2**40, 0], np.int64))


def test_float64_data_at_the_first_step_names_the_input():
    tw.manual_seed(0)
    x = np.random.default_rng(4).uniform(-1, 1, (8, 12))  # numpy's default: float64
    with pytest.raises(tw.InvalidArgumentError,
                       match=r"input 'x' is float64 \[8, 12\] but the model's parameters are "
                             r"float32: pass x.astype\(np.float32\)"):
        graph = Forward(Mlp())
        graph(x)
    assert graph(x.astype(np.float32)).shape == (8, 5)  # the corrected call traces afresh
    # A list has no dtype: floats become float32, as in torch.tensor().
    assert Forward(Mlp())(x.tolist()).dtype == np.float32


@pytest.mark.parametrize("strategy", ["auto", "dp=2,tp=2"])
def test_a_nan_gives_a_nan_loss(strategy):
    from conftest import TrainStep, batches
    tw.manual_seed(0)
    model = Mlp()
    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1)).compile(strategy=strategy)
    x, y = batches(1)[0]
    x = x.copy()
    x[3, 5] = np.nan  # one sample, one feature: through matmul, ReLU, the loss
    assert np.isnan(step(x, y))
    # The update spread it into the weights; the next loss says so too (not a finite one).
    assert np.isnan(model.body[0].weight.numpy()).any()
    assert np.isnan(step(*batches(1)[0]))
    fresh = Mlp()
    step_inf = TrainStep(fresh, tw.optim.SGD(fresh.parameters(), lr=0.1))
    x[3, 5] = np.inf
    assert not np.isfinite(step_inf.compile(strategy=strategy)(x, y))
