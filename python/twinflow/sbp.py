"""SBP layouts: how a logical tensor lies on the devices of one placement axis.

``split(axis)`` cuts it along ``axis``, ``broadcast`` copies it whole, ``partial_sum`` holds
addends whose sum is the tensor. A tensor on an n-axis placement takes one per axis.
"""
from . import _C


class Sbp:
    def __init__(self, text):
        self._text = text

    def __eq__(self, other):
        return isinstance(other, Sbp) and self._text == other._text

    def __hash__(self):
        return hash(self._text)

    def __repr__(self):
        return f"tw.sbp.{self._text}"

    def __str__(self):
        return self._text


def split(axis):
    if not isinstance(axis, int) or isinstance(axis, bool) or axis < 0:
        raise _C.InvalidArgumentError(f"sbp.split: axis must be a non-negative int, got {axis!r}")
    return Sbp(f"S({axis})")


broadcast = Sbp("B")
partial_sum = Sbp("P")
partial_max = Sbp("P(max)")


def nd_text(sbp, ndim, what):
    """The engine's text for one Sbp or a tuple of them on an `ndim`-axis placement."""
    layout = tuple(sbp) if isinstance(sbp, (tuple, list)) else (sbp,)
    if not all(isinstance(s, Sbp) for s in layout):
        raise _C.InvalidArgumentError(f"{what}: sbp must be tw.sbp values, got {sbp!r}")
    if len(layout) != ndim:
        raise _C.InvalidArgumentError(
            f"{what}: {len(layout)} sbp for a placement with {ndim} axes (give one per axis)")
    return _C.check_nd_sbp("(" + ",".join(str(s) for s in layout) + ")")
