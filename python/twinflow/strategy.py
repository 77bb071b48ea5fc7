"""A strategy string ("dp=2,tp=2,pp=2,mb=4,schedule=1f1b" or "auto") as placements and the
layouts it pins, for graphs written in Python (the same rules as the C++ models'
models/strategy.h and models/pins.h)."""
from . import _C
from . import sbp as tw_sbp
from .placement import placement as Placement

_KEYS = ("dp", "tp", "pp", "mb", "schedule")


class StrategyLayout:
    def __init__(self, text="auto", devices=None, placement=None):
        if not isinstance(text, str):
            raise _C.InvalidArgumentError(f"strategy must be a string such as 'dp=2,tp=2' or 'auto', got {text!r}")
        if devices is not None and (not isinstance(devices, int) or isinstance(devices, bool) or devices < 1):
            raise _C.InvalidArgumentError(f"devices must be a positive int, got {devices!r}")
        if placement is not None and not isinstance(placement, Placement):
            raise _C.InvalidArgumentError(f"placement must be a tw.placement, got {placement!r}")
        if placement is not None and not text == "auto":
            raise _C.InvalidArgumentError("placement= goes with strategy 'auto'; a dp/tp/pp strategy places stages itself")
        self.text = text
        self.automatic = text == "auto"
        self.dp = self.tp = self.pp = self.mb = 1
        self.schedule = "1f1b"
        if not self.automatic:
            seen = set()
            for field in text.split(","):
                key, eq, value = field.partition("=")
                key = key.strip()
                if key == "recompute":
                    raise _C.InvalidArgumentError(
                        f"strategy {text!r}: in a tw.Graph, choose what to recompute with "
                        "Module.recompute() (the recompute field is for tw.models' built-in models)")
                if key not in _KEYS or not eq:
                    raise _C.InvalidArgumentError(
                        f"strategy {text!r}: unknown field {field!r} (expected {', '.join(_KEYS)} or 'auto')")
                if key in seen:
                    raise _C.InvalidArgumentError(f"strategy {text!r}: {key} given twice")
                seen.add(key)
                if key == "schedule":
                    if value not in ("1f1b", "gpipe"):
                        raise _C.InvalidArgumentError(f"strategy {text!r}: schedule must be 1f1b or gpipe")
                    self.schedule = value
                    continue
                if not value.isdigit() or int(value) < 1:
                    raise _C.InvalidArgumentError(f"strategy {text!r}: {key} must be a positive integer")
                setattr(self, key, int(value))
            need = self.dp * self.tp * self.pp
            if devices is not None and devices != need:
                raise _C.InvalidArgumentError(
                    f"strategy {text!r} needs dp*tp*pp = {need} devices, got devices={devices}")
            self.devices = need
            self.placement = self.stage_placement(0)
        else:
            if placement is None:
                placement = Placement("cpu", devices or 1)
            self.placement = placement
            self.devices = len(placement)

    def stage_placement(self, stage):
        if self.automatic:
            return self.placement
        if stage >= self.pp:
            raise _C.InvalidArgumentError(f"stage {stage} is beyond the strategy's pp={self.pp} stages")
        group = self.dp * self.tp
        return Placement("cpu", range(stage * group, (stage + 1) * group), [self.dp, self.tp])

    def default_input_sbp(self):
        """Data split on the batch over dp (replicated over tp); "auto": left to the search."""
        return None if self.automatic else (tw_sbp.split(0), tw_sbp.broadcast)

    def default_param_sbp(self, param):
        if self.automatic:
            return None
        B = tw_sbp.broadcast
        return {"column": (B, tw_sbp.split(1)), "column_bias": (B, tw_sbp.split(0)),
                "row": (B, tw_sbp.split(0)), "vocab": (B, tw_sbp.split(0))}.get(param.role, (B, B))
