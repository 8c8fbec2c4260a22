"""dy.mpi: synchronous data-parallel training over MPI ranks (C++: dynet/mpi.h).

    dist = dy.mpi.DistributedTrainer(trainer)          # or comm=mpi4py.MPI.COMM_WORLD
    first, last = dist.shard(len(minibatch)); ...; dist.update(); total = dist.sum(loss)

Its compiled part, the extension dynet._dynet_mpi, links OpenMPI's libmpi, so it is loaded only when a name
of this module is first used: `import dynet` works where OpenMPI is not installed. There `available()` is
False and every other name raises ImportError saying what to install. Names: available, rank, size,
is_root, abort, mark_failed, DistributedTrainer.
"""
import importlib as _importlib

_extension = None
_load_error = None

MISSING = ("dynet.mpi needs OpenMPI's library libmpi.so.40, which could not be loaded ({error}). Install "
           "OpenMPI (Debian/Ubuntu: `apt install libopenmpi3 openmpi-bin`; other systems: their OpenMPI 4 or 5 "
           "package, with its lib folder on the loader's path, e.g. LD_LIBRARY_PATH); the rest of dynet works "
           "without it")


def _load():
    global _extension, _load_error
    if _extension is None and _load_error is None:
        try:
            _extension = _importlib.import_module("dynet._dynet_mpi")
        except ImportError as e:
            _load_error = e
    if _extension is None:
        raise ImportError(MISSING.format(error=_load_error)) from _load_error
    return _extension


def available():
    """True when dynet was built with MPI and OpenMPI's library loads here (no exception either way)."""
    try:
        return _load().available()
    except ImportError:
        return False


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_load(), name)


def __dir__():
    return ["DistributedTrainer", "MISSING", "abort", "available", "is_root", "mark_failed", "rank", "size"]
