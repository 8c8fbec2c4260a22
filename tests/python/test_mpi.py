"""dynet.mpi: data-parallel training over MPI ranks from Python. The two-rank runs go through mpirun
(tests/python/mpi_rank.py); they are skipped when dynet was built without MPI or mpirun is missing, and the
one-rank test where OpenMPI's library is not installed (a wheel on a machine without it)."""
import ctypes.util
import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import dynet as dy

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_SCRIPT = os.path.join(HERE, "mpi_rank.py")


def mpirun(mode, out_dir):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader")
    return subprocess.run(["mpirun", "--oversubscribe", "-np", "2", sys.executable, RANK_SCRIPT, mode, str(out_dir)],
                          capture_output=True, text=True, env=env, timeout=120)


needs_mpi = pytest.mark.skipif(not dy.mpi.available() or shutil.which("mpirun") is None,
                               reason="dynet built without MPI, or no mpirun")


def mpi_library_missing():
    dy.mpi.available()
    return dy.mpi._load_error is not None and ctypes.util.find_library("mpi") is None


def run_python(code):
    return subprocess.run([sys.executable, "-c", "import sys; sys.argv = sys.argv[:1]\n" + code],
                          capture_output=True, text=True, timeout=120)


def test_import_dynet_loads_no_mpi():
    """The MPI extension (and with it libmpi) is loaded on first use of dy.mpi, not by `import dynet`."""
    r = run_python("import dynet as dy\n"
                   "assert 'dynet._dynet_mpi' not in sys.modules\n"
                   "maps = open('/proc/self/maps').read()\n"
                   "assert 'libmpi' not in maps and 'libdynet_mpi' not in maps, maps\n"
                   "dy.mpi.available()\n"
                   "print('dynet._dynet_mpi' in sys.modules)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(not mpi_library_missing())


def test_missing_mpi_library_is_named():
    """Where the extension cannot load (no libmpi), available() is False and every other name says what to
    install; the rest of dynet works. The failed load is simulated by blocking the extension's import."""
    r = run_python("sys.modules['dynet._dynet_mpi'] = None\n"
                   "import dynet as dy\n"
                   "assert dy.mpi.available() is False\n"
                   "for use in (lambda: dy.mpi.rank(), lambda: dy.mpi.DistributedTrainer):\n"
                   "    try:\n"
                   "        use()\n"
                   "        raise SystemExit('no error')\n"
                   "    except ImportError as e:\n"
                   "        print(e)\n"
                   "print(dy.tanh(dy.scalarInput(0.5)).value())\n")
    assert r.returncode == 0, r.stdout + r.stderr
    errors = r.stdout.splitlines()[:2]
    assert all("dynet.mpi needs OpenMPI's library libmpi.so.40" in e and "apt install libopenmpi3" in e
               for e in errors), errors
    assert abs(float(r.stdout.splitlines()[2]) - np.tanh(0.5)) < 1e-6


@pytest.mark.skipif(mpi_library_missing(), reason="OpenMPI's library (libmpi.so.40) is not installed")
def test_one_rank_is_the_plain_trainer():
    pc = dy.ParameterCollection()
    W = pc.add_parameters((2, 2), init=dy.ConstInitializer(0.5))
    trainer = dy.SimpleSGDTrainer(pc, 0.1)
    dist = dy.mpi.DistributedTrainer(trainer)
    assert (dist.size, dist.rank, dist.is_root) == (1, 0, True)
    assert dist.shard(7) == (0, 7)
    assert dist.sum(2.5) == 2.5 and dist.sum([1.0, 2.0]) == [1.0, 2.0]
    dy.renew_cg()
    l = dy.squared_norm(W * dy.inputVector([1.0, -2.0]))
    l.backward()
    dist.update()
    # d/dW ||W x||² = 2 (W x) xᵀ, W x = (-0.5, -0.5): one SGD step of 0.1.
    expected = 0.5 - 0.1 * 2 * -0.5 * np.array([[1.0, -2.0], [1.0, -2.0]])
    assert np.allclose(W.as_array(), expected)
    with pytest.raises(ValueError):
        dy.mpi.DistributedTrainer(dy.SimpleSGDTrainer(pc), reduction="max")


@needs_mpi
def test_two_ranks_stay_identical_and_match_one_process(tmp_path):
    run = mpirun("train", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    r0, r1 = np.load(tmp_path / "rank0.npz"), np.load(tmp_path / "rank1.npz")
    assert r0["final"].tobytes() == r1["final"].tobytes()  # bitwise identical
    assert r0["initial"].tobytes() == r1["initial"].tobytes()  # the broadcast replaced rank 1's values
    assert float(r0["total"]) == float(r1["total"])
    # One process on the whole minibatches from the same initial values.
    spec = importlib.util.spec_from_file_location("mpi_rank", RANK_SCRIPT)
    rank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank)
    pc = dy.ParameterCollection()
    model = rank.build(dy, pc)
    E, W, b = model
    init = r0["initial"]
    nw, nb = rank.CLASSES * rank.DIM, rank.CLASSES
    W.set_value(init[:nw].reshape(rank.CLASSES, rank.DIM))
    b.set_value(init[nw:nw + nb])
    for i, row in enumerate(init[nw + nb:].reshape(rank.VOCAB, rank.DIM)):
        E.init_row(i, row)
    assert np.array_equal(rank.values(model), init)
    trainer = dy.AdamTrainer(pc, 0.05)
    total = 0.0
    for mb in rank.minibatches():
        dy.renew_cg()
        l = rank.loss(dy, model, mb)
        total += l.value()
        l.backward()
        trainer.update()
    assert np.allclose(rank.values(model), r0["final"], rtol=1e-5, atol=1e-6)
    assert abs(total - float(r0["total"])) < 1e-4 * abs(total)
    assert not np.allclose(r0["final"], init)  # training moved the parameters


@needs_mpi
def test_a_rank_that_raises_ends_the_job(tmp_path):
    run = mpirun("fail", tmp_path)
    assert run.returncode != 0
    assert "rank 1 fails on purpose at step 2" in run.stdout + run.stderr
    assert not (tmp_path / "rank0.npz").exists()  # rank 0 did not go on alone
