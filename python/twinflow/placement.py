"""Placements: a device type, an ordered list of global device ids and a mesh shape."""
from . import _C


class placement:
    """Where a tensor or an op lives, e.g. ``tw.placement("cpu", 4, [2, 2])``.

    devices: a count (ids 0..n-1), or an iterable of global device ids.
    hierarchy: the mesh shape; its product is the device count (default: one axis).
    """

    def __init__(self, type="cpu", devices=1, hierarchy=None):
        if type not in ("cpu", "cuda"):
            raise _C.InvalidArgumentError(f"placement type {type!r}: expected 'cpu' or 'cuda'")
        ids = list(range(devices)) if isinstance(devices, int) else [int(d) for d in devices]
        if not ids:
            raise _C.InvalidArgumentError("a placement needs at least one device")
        self.type = type
        self.devices = ids
        self.hierarchy = [len(ids)] if hierarchy is None else [int(h) for h in hierarchy]
        # The engine checks the text (ids, mesh product) and names what is wrong.
        self._text = _C.check_placement(
            f"{type}:{','.join(str(d) for d in ids)} [{','.join(str(h) for h in self.hierarchy)}]")

    @classmethod
    def _from_text(cls, text):
        device_part, _, mesh = text.partition(" ")
        type, _, ids = device_part.partition(":")
        devices = []
        for run in ids.split(","):
            first, _, last = run.partition("-")
            devices.extend(range(int(first), int(last or first) + 1))
        hierarchy = [int(h) for h in mesh.strip("[]").split(",")] if mesh else None
        return cls(type, devices, hierarchy)

    @property
    def ndim(self):
        return len(self.hierarchy)

    def __len__(self):
        return len(self.devices)

    def __eq__(self, other):
        return isinstance(other, placement) and self._text == other._text

    def __hash__(self):
        return hash(self._text)

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"placement({self._text!r})"
