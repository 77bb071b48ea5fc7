"""This process's place among the ranks of mpirun. MPI starts the first time it is needed
when mpirun launched the process, and ends (after every graph's runner) at exit. torchrun's
environment is refused where it disagrees with MPI (docs/comm.md, Launching)."""
import atexit
import weakref

from . import _C

_state = {"session": None, "started": False}
_runners = weakref.WeakSet()


def session():
    """The MPI session, or None outside mpirun. Ranks come from MPI only: torchrun's RANK,
    WORLD_SIZE or LOCAL_RANK, when set, must agree with it (else ValueError: launch with
    mpirun)."""
    if not _state["started"]:
        _state["started"] = True
        if _C.MpiSession.launched_by_mpirun():
            _state["session"] = _C.MpiSession()
            atexit.register(_finish)
    _C.check_launch_environment(_state["session"])
    return _state["session"]


def rank():
    s = session()
    return s.rank if s else 0


def world_size():
    s = session()
    return s.size if s else 1


def is_main():
    """True on rank 0, the rank that prints for all."""
    return rank() == 0


def track(runner):
    _runners.add(runner)


def _finish():
    # Every runner's threads and communicators go before MPI_Finalize (the session's end).
    for runner in list(_runners):
        runner.close()
    _state["session"] = None
