"""tw.Graph: a model's training (or inference) step, traced once and compiled to an actor
Plan, as OneFlow's nn.Graph. Subclass it, assign modules as attributes, write build(), and
optionally add an optimizer:

    class TrainStep(tw.Graph):
        def __init__(self, model, opt):
            super().__init__()
            self.model = model
            self.loss_fn = tw.nn.CrossEntropyLoss()
            self.add_optimizer(opt)

        def build(self, x, labels):
            return self.loss_fn(self.model(x), labels)

    step = TrainStep(model, tw.optim.SGD(model.parameters(), lr=0.1))
    step.compile(strategy="dp=2,tp=2")
    loss = step(x_batch, y_batch)      # numpy in, float out

build() is traced with the inputs of one micro-batch the first time the graph is stepped (or
when compile() is given example inputs); every later step runs the compiled Plan.
"""
import inspect
import math

from . import _C, distributed
from . import sbp as tw_sbp
from .lazy import LazyTensor, Trace
from .nn.module import Module
from .report import Explanation, MemoryReport, SimulationReport
from .strategy import StrategyLayout
from .tensor import as_spec, feed_array


def _explain_float64(error, names, specs, trace):
    """A build() that failed with float64 inputs and float32 parameters failed on the mix (as
    PyTorch's "expected scalar type Float but found Double"): say which input to convert."""
    wide = [(n, s) for n, s in zip(names, specs) if s.dtype == "f64"]
    if wide and any(p.dtype == "f32" for p in trace.params):
        name, spec = wide[0]
        raise _C.InvalidArgumentError(
            f"input '{name}' is float64 {list(spec.shape)} but the model's parameters are "
            f"float32: pass {name}.astype(np.float32) (twinflow does not mix or narrow float "
            f"dtypes silently); the engine said: {error}") from error


def _check_memory_limit(limit):
    """None, or a positive finite number of bytes: as the CLI's --memory-limit, which is refused
    when not positive; 0 would silently mean no limit to the engine."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit) \
            or limit <= 0:
        raise _C.InvalidArgumentError(f"memory_limit must be a positive, finite number of bytes per "
                                      f"device, got {limit!r}")


class Graph:
    def __init__(self):
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_optimizer", None)
        object.__setattr__(self, "_options", {"strategy": "auto", "devices": None,
                                              "placement": None, "search": "auto",
                                              "memory_limit": None, "feed": "local"})
        self._reset()

    def _reset(self):
        object.__setattr__(self, "_specs", None)
        object.__setattr__(self, "_programs", {})   # by cost model
        object.__setattr__(self, "_params", [])     # (Parameter, variable name) in the graph
        object.__setattr__(self, "_fetch_names", [])
        object.__setattr__(self, "_runner", None)
        object.__setattr__(self, "_loaded", {})     # Parameter -> the version the runner holds
        object.__setattr__(self, "_kept_state", {})  # optimizer state for the next runner
        object.__setattr__(self, "_lr_held", {})  # by id(runner): the learning rate it holds
        object.__setattr__(self, "steps_done", 0)

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def build(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must define build()")

    def add_optimizer(self, optimizer):
        """Makes this a training graph: build() returns the loss, each step updates the
        optimizer's parameters."""
        from .optim import Optimizer
        if not isinstance(optimizer, Optimizer):
            raise _C.InvalidArgumentError(f"add_optimizer expects a tw.optim optimizer, got {optimizer!r}")
        object.__setattr__(self, "_optimizer", optimizer)

    @property
    def training(self):
        return self._optimizer is not None

    def compile(self, *example_inputs, strategy="auto", devices=None, placement=None,
                search="auto", memory_limit=None, feed="local"):
        """Sets how the graph is distributed. strategy: "dp=..,tp=..,pp=..,mb=..,schedule=.."
        (Megatron-style placements and pins, stage placements for set_stage) or "auto" (one
        `placement`, or `devices` devices on one axis; layouts from pins and the SBP search).
        With example inputs (arrays, tw.Tensor or tw.TensorSpec of the whole, global batch) it
        compiles now; otherwise at the first step. memory_limit: bytes per device for the
        search. feed: what each rank passes to step() under mpirun: "local" (its own rows of the
        batch, as with DistributedSampler; feed_shapes() says which) or "global" (the whole
        batch). In one process both are the whole batch. Compiling again (under any strategy)
        keeps the trained state: parameters, optimizer state and steps_done."""
        # A failed compile leaves the graph refusing to run until one succeeds: training on
        # under the previous strategy would hide the mistake.
        object.__setattr__(self, "_compile_error", None)
        try:
            StrategyLayout(strategy, devices, placement)  # errors now, not at the first step
            if search not in ("auto", "exact", "propagate"):
                raise _C.InvalidArgumentError(
                    f"search must be auto, exact or propagate, got {search!r}")
            if feed not in ("local", "global"):
                raise _C.InvalidArgumentError(f"feed must be local or global, got {feed!r}")
            _check_memory_limit(memory_limit)
        except Exception as e:
            object.__setattr__(self, "_compile_error", e)
            raise
        kept = self._take_state_out()
        self._close_runner()
        self._options.update(strategy=strategy, devices=devices, placement=placement,
                             search=search, memory_limit=memory_limit, feed=feed)
        steps = self.steps_done
        self._reset()
        object.__setattr__(self, "steps_done", steps)
        object.__setattr__(self, "_kept_state", kept)
        if example_inputs:
            self._program_for(self._specs_of(example_inputs))
        return self

    # -- tracing and compiling --------------------------------------------------------------

    def _input_names(self, count):
        """The feeds are named after build()'s parameters (input0, ... for *args)."""
        params = list(inspect.signature(self.build).parameters.values())
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            return [f"input{i}" for i in range(count)]
        if len(params) != count:
            raise _C.InvalidArgumentError(
                f"{type(self).__name__}.build takes {len(params)} inputs, got {count}")
        return [p.name for p in params]

    def _build_model(self, specs, strategy, devices, placement=None, staged=True):
        """(model, params, input names, stages): build() traced under `strategy` on `devices`,
        as the engine's Model; params pairs each Parameter with its variable's name, stages
        are those set_stage placed ops on. staged: refuse a pipelined strategy without them."""
        layout = StrategyLayout(strategy, devices, placement)
        for attr, module in self._modules.items():
            for path, p in module.named_parameters(attr + "."):
                if getattr(p, "_name", None) is None:
                    p._name = path
        builder = _C.GraphBuilder(str(layout.placement))
        if layout.precision != "f32":
            builder.set_autocast(layout.precision)  # weights stay fp32; finish() turns it off
        names = self._input_names(len(specs))
        with Trace(builder, layout) as trace:
            inputs = []
            for name, spec in zip(names, specs):
                shape = list(spec.shape)
                if not shape or shape[0] % layout.mb:
                    raise _C.InvalidArgumentError(
                        f"input '{name}': batch {shape[:1]} is not divisible by mb={layout.mb}")
                shape[0] //= layout.mb
                placement = spec.placement or layout.placement  # a tw.Tensor's own, if global
                builder.placement = str(placement)
                id = builder.input(name, shape, spec.dtype)
                builder.placement = str(layout.placement)
                pin = ((tw_sbp.nd_text(spec.sbp, placement.ndim, f"input '{name}'"), [])
                       if spec.sbp is not None else layout.default_input_pin())
                if pin is not None:
                    builder.pin(id, *pin)
                inputs.append(LazyTensor(trace, id))
            try:
                out = self.build(*inputs)
            except _C.InvalidArgumentError as error:
                _explain_float64(error, names, specs, trace)
                raise
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        if not outputs or not all(isinstance(t, LazyTensor) and t._trace is trace for t in outputs):
            raise _C.InvalidArgumentError(f"{type(self).__name__}.build must return graph tensors "
                                          f"(the loss when training), got {out!r}")
        if self.training and (len(outputs) != 1 or outputs[0].numel() != 1):
            raise _C.InvalidArgumentError(f"{type(self).__name__}.build must return one scalar loss "
                                          f"when training, got shape {list(outputs[0].shape)}")
        trained = [trace.params[p] for p in (self._optimizer.params if self.training else [])
                   if p in trace.params]
        if self.training and not trained:
            raise _C.InvalidArgumentError("none of the optimizer's parameters is used in build()")
        model = builder.finish([t.id for t in outputs], trained, names,
                               self._optimizer.spec() if self.training else "", layout.mb,
                               layout.schedule, trace.recompute, strategy, layout.devices)
        if staged and layout.stages > 1 and not trace.stages:
            raise _C.InvalidArgumentError(
                f"strategy {strategy}: {layout.stages} pipeline stages, but build() never calls "
                "set_stage(i) to place its layers on them (tw.Graph.set_stage; see "
                "docs/python.md), so every op would stay on stage 0")
        params = [(p, builder.name(id)) for p, id in trace.params.items()]
        return model, params, names, trace.stages

    def _specs_of(self, examples):
        return [as_spec(x, f"input {i}") for i, x in enumerate(examples)]

    def _model(self, specs, strategy, devices):
        """tw.tune's build of one candidate: the model, the graph's own state untouched."""
        return self._build_model(specs, strategy, devices)[0]

    def _stages_used(self, specs):
        """Whether build() places its ops on pipeline stages (set_stage): traced once for two."""
        return bool(self._build_model(specs, "pp=2", 2, staged=False)[3])

    def _trace(self, specs, cluster):
        o = self._options
        model, params, names, _ = self._build_model(specs, o["strategy"], o["devices"],
                                                    o["placement"])
        layout = StrategyLayout(o["strategy"], o["devices"], o["placement"])
        ranks = distributed.world_size()
        if layout.devices % ranks:
            raise _C.InvalidArgumentError(f"{layout.devices} devices do not split over {ranks} ranks")
        # Run: the cpu-host cost model; simulated: the cluster's own (priced as it is timed).
        program = _C.compile(model, layout.devices // ranks if ranks > 1 else 0, "cpu-host",
                             o["search"], float(o["memory_limit"] or 0),
                             cluster=cluster[0] if cluster else "", nodes=cluster[1] if cluster else None)
        return program, params, model.fetch_names, names

    def _program_for(self, specs, cluster=None):
        """The Plan to run (cluster None) or to simulate on (cluster, nodes)."""
        specs = self._specs if self._specs is not None else specs
        if cluster not in self._programs:
            program, params, fetches, names = self._trace(specs, cluster)
            self._programs[cluster] = program
            object.__setattr__(self, "_params", params)
            object.__setattr__(self, "_fetch_names", fetches)
            object.__setattr__(self, "_input_names_used", names)
        # Only a trace that worked fixes the input specs: a corrected call traces afresh.
        object.__setattr__(self, "_specs", specs)
        return self._programs[cluster]

    def _check_traced_shards(self, arrays):
        """A graph traced at its first step takes that step's inputs as the global batch. Under
        feed="local" on several ranks that is right only where this rank passes whole inputs;
        a shard would make a graph of the wrong batch."""
        if self._options["feed"] != "local" or distributed.world_size() == 1:
            return
        for spec, array in zip(self._feed_specs(), arrays):
            shape = tuple(as_spec(array, f"input '{spec['name']}'").shape)
            if spec["read"] and shape != tuple(spec["shape"]):
                self._reset()
                raise _C.InvalidArgumentError(
                    f"feed='local' under mpirun: input '{spec['name']}' of shape "
                    f"{list(shape)} was taken as the whole batch, but this rank passes "
                    f"{list(spec['shape'])} of it; compile the graph with example inputs of the "
                    "whole batch first (graph.compile(x_example, ..., strategy=...)), or use "
                    "feed='global'")

    def _compiled(self, what):
        if self._specs is None:
            raise _C.InvalidArgumentError(f"{what}: compile the graph with example inputs (or step "
                                          "it once) first, so that the input shapes are known")
        return self._program_for(self._specs)

    @property
    def program(self):
        return self._compiled("program")

    def _feed_specs(self):
        return _C.feed_specs(self._compiled("feed_shapes"), distributed.rank(), self._options["feed"])

    def feed_shapes(self):
        """What this rank passes to step() for each input, {name: shape}, under the graph's feed
        mode: with feed="local" its own rows of the batch (micro-batches stacked), and the whole
        batch for an input broadcast across ranks or read by no device of this rank; with
        feed="global" the whole batch. step() refuses any other shape (ShapeError)."""
        return {s["name"]: s["shape"] for s in self._feed_specs()}

    def feed_rows(self):
        """For each input, the rows (begin, end) of each micro-batch of the global batch that
        this rank passes under the graph's feed mode ((0, batch) when whole; () for a scalar).
        Without micro-batches, x[slice(*graph.feed_rows()["x"])] is this rank's part of x."""
        return {s["name"]: s["rows"] for s in self._feed_specs()}

    # -- running ------------------------------------------------------------------------------

    def _get_runner(self):
        if self._runner is None:
            runner = _C.Runner(self._compiled("step"), distributed.session(),
                               feed=self._options["feed"])
            distributed.track(runner)
            object.__setattr__(self, "_runner", runner)
            names = set(runner.variable_names())
            for name, value in self._kept_state.items():
                if name in names:  # an optimizer the new graph still has
                    runner.set_variable(name, value)
            object.__setattr__(self, "_kept_state", {})
        return self._runner

    def _take_state_out(self):
        """Before a recompile closes the runner: the parameters it holds the latest values of
        come back to the host (same version, so graphs already holding them do not reload),
        and the other variables (momentum, Adam moments and step) are returned by name, for
        the next runner. Collective under mpirun, as compile() is called on every rank."""
        runner = self._runner
        if runner is None:
            return self._kept_state
        params = set()
        for p, name in self._params:
            params.add(name)
            if p._home is runner:
                p._value, p._home, p._home_name = runner.variable(name), None, None
        return {name: runner.variable(name) for name in runner.variable_names()
                if name not in params}

    def _close_runner(self):
        if self._runner is not None:
            self._runner.close()

    def _sync_parameters_in(self, runner):
        """Parameters updated elsewhere (another graph, copy_, a checkpoint) come in first."""
        for p, name in self._params:
            if self._loaded.get(p) != p._version:
                runner.set_variable(name, p.numpy())
                self._loaded[p] = p._version

    def _sync_learning_rate(self, runner):
        """The optimizer's param_groups[0]["lr"] into the graph's learning_rate variable, when it
        differs from what this runner holds (the value compiled in, or the last one sent)."""
        lr = self._optimizer.lr
        held = self._lr_held.get(id(runner), self._optimizer.hyper["lr"])
        if lr != held:
            import numpy as np
            runner.set_variable("learning_rate", np.array(lr, dtype=np.float32))
            self._lr_held[id(runner)] = lr

    def __call__(self, *batch):
        return self.step(*batch)

    def run(self, *batch):
        """The same as step() (the name the original design notes use)."""
        return self.step(*batch)

    def step(self, *batch):
        """One step on numpy arrays (or tw.Tensor): the loss as a float when training (the
        parameters are updated), else the outputs as numpy arrays."""
        if getattr(self, "_compile_error", None) is not None:
            raise _C.InvalidArgumentError(
                f"the last compile() failed ({self._compile_error}); call compile() again "
                "before step()")
        if self._specs is None:
            self._program_for([as_spec(b, f"input {i}") for i, b in enumerate(batch)])
            self._check_traced_shards(batch)
        if len(batch) != len(self._specs):
            raise _C.InvalidArgumentError(f"{type(self).__name__} was compiled for "
                                          f"{len(self._specs)} inputs, got {len(batch)}")
        self._program_for(self._specs)  # traced, so the input names are known
        arrays = [feed_array(b, spec, name)
                  for b, spec, name in zip(batch, self._specs, self._input_names_used)]
        runner = self._get_runner()
        self._sync_parameters_in(runner)
        if self.training:
            self._sync_learning_rate(runner)
        fetched = runner.step(dict(zip(self._input_names_used, arrays)))
        if not self.training:
            outputs = [fetched[name] for name in self._fetch_names]
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        for p, name in self._params:
            if p in set(self._optimizer.params):
                p._moved_to(runner, name)
                self._loaded[p] = p._version
        object.__setattr__(self, "steps_done", self.steps_done + 1)
        # Each micro-batch's loss is its share of the step's mean.
        return float(fetched[self._fetch_names[0]].sum())

    @property
    def mean_step_seconds(self):
        return self._runner.mean_step_seconds if self._runner is not None else 0.0

    # -- inspecting -----------------------------------------------------------------------------

    def explain(self):
        return Explanation(self._compiled("explain").explain())

    def memory(self):
        return MemoryReport(self._compiled("memory").memory())

    def simulate(self, cluster="cpu-local", nodes=None, steps=1, replicas=1, trace=False):
        """Runs the compiled Plan in the simulator on `cluster` (a preset: cpu-local,
        dgx-a100, dgx-h100, hgx-h200, or a ClusterSpec .pbtxt file) of `nodes` nodes (default:
        one for a preset, the file's own for a file)."""
        self._compiled("simulate")
        program = self._program_for(self._specs, (cluster, nodes))
        data = _C.simulate(program, cluster, nodes, steps, replicas, trace)
        samples = self._specs[0].shape[0] * replicas if self._specs[0].shape else replicas
        return SimulationReport(data, samples, self._options["strategy"])

    # -- checkpoints ----------------------------------------------------------------------------

    def save(self, directory):
        """Saves every variable (parameters and optimizer state) as logical tensors, so the
        checkpoint loads under any strategy; atomic, with a checksum. Collective under mpirun."""
        runner = self._get_runner()
        self._sync_parameters_in(runner)
        runner.save(directory, self.steps_done)

    def load(self, directory):
        """Loads a checkpoint saved by save() (under any strategy); returns its step count."""
        runner = self._get_runner()
        steps = runner.load(directory)
        for p, name in self._params:
            p._moved_to(runner, name)
            self._loaded[p] = p._version
        object.__setattr__(self, "steps_done", steps)
        return steps
