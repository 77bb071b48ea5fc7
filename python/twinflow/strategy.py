"""A strategy string ("dp=2,tp=2,pp=2,mb=4,schedule=1f1b", "tp=auto" or "auto") as placements
and the layouts it pins, for graphs written in Python. Parsing, degree inference, stage
placement and Megatron's weight layouts are the C++ models' own (models/strategy.h and
models/pins.h, through twinflow._C), so the rules and the errors are the CLI's."""
from . import _C
from . import distributed
from .placement import placement as Placement

MAX_DEVICES = 1 << 20  # the CLI's bound on --devices (launcher/model_args.cc)

class StrategyLayout:
    def __init__(self, text="auto", devices=None, placement=None):
        if not isinstance(text, str):
            raise _C.InvalidArgumentError(f"strategy must be a string such as 'dp=2,tp=2' or 'auto', got {text!r}")
        if devices is not None and (not isinstance(devices, int) or isinstance(devices, bool) or devices < 1
                                    or devices > MAX_DEVICES):
            raise _C.InvalidArgumentError(
                f"devices must be an int in [1, {MAX_DEVICES}] (the CLI's --devices), got {devices!r}")
        if placement is not None and not isinstance(placement, Placement):
            raise _C.InvalidArgumentError(f"placement must be a tw.placement, got {placement!r}")
        if placement is not None and not text == "auto":
            raise _C.InvalidArgumentError("placement= goes with strategy 'auto'; a dp/tp/pp strategy places stages itself")
        self.text = text
        try:
            core = _C.parse_strategy(text)
        except _C.InvalidArgumentError as e:
            raise _C.InvalidArgumentError(f"strategy {text!r}: {e}") from None
        if core.recompute != "none":
            raise _C.InvalidArgumentError(
                f"strategy {text!r}: in a tw.Graph, choose what to recompute with "
                "Module.recompute() (the recompute field is for tw.models' built-in models)")
        self._core = core
        self.automatic = core.automatic
        if not self.automatic:
            # As the CLI: without devices=, an inferred degree takes one device per rank under
            # mpirun, else the degrees' product.
            if devices is None:
                ranks = distributed.world_size()
                devices = ranks if core.infers_degree and ranks > 1 else core.default_devices
            try:
                core.resolve(devices)
            except _C.InvalidArgumentError as e:
                raise _C.InvalidArgumentError(f"strategy {text!r} on {devices} devices: {e}") from None
            self.devices = core.devices
            self.placement = self.stage_placement(0)
        else:
            if placement is None:
                placement = Placement("cpu", devices or 1)
            self.placement = placement
            self.devices = len(placement)
        self.dp, self.tp, self.pp, self.mb = core.dp, core.tp, core.pp, core.mb
        self.vp = core.vp  # model chunks per pipeline rank: stages = pp * vp, interleaved
        self.stages = core.stages
        self.schedule = core.schedule
        self.precision = core.precision  # "f32", "bf16" or "f16": the forward pass's dtype

    def stage_placement(self, stage):
        if self.automatic:
            return self.placement
        return Placement._from_text(self._core.stage_placement(stage, self.devices))

    def default_input_pin(self):
        """(layout text, free mesh axes): data split on the batch over dp (replicated over tp);
        "auto": None, left to the search."""
        return None if self.automatic else ("(S(0),B)", list(self._core.searched_axes))

    def default_param_pin(self, param):
        """(layout text, free mesh axes) for a parameter of the given Megatron role."""
        if self.automatic:
            return None
        role = getattr(param, "role", None) or "replicated"
        return _C.weight_layout(role), list(self._core.searched_axes)
