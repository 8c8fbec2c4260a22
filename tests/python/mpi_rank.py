"""One rank of the MPI tests in test_mpi.py (run as `mpirun -np 2 python mpi_rank.py MODE OUT_DIR`).

train: every rank starts from its own random values (the broadcast must replace them), trains on its
       shard of the same minibatches through dy.mpi.DistributedTrainer and writes its values to
       OUT_DIR/rank<r>.npz (rank 0 also the values right after the broadcast).
fail:  rank 1 raises before its third update; the job must end with its error.
The model code is shared with the test's one-process reference (imported from this file).
"""
import os
import sys

RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
sys.argv = sys.argv[:3]

VOCAB, DIM, CLASSES = 20, 4, 3


def minibatches():
    state = 7
    out = []
    for size in (4, 5, 1, 6, 3, 4):
        mb = []
        for _ in range(size):
            words = []
            for _ in range(1 + state % 3):
                state = (state * 1103515245 + 12345) % 2147483648
                words.append(state % VOCAB)
            mb.append((words, state % CLASSES))
        out.append(mb)
    return out


def build(dy, pc):
    return (pc.add_lookup_parameters((VOCAB, DIM)), pc.add_parameters((CLASSES, DIM)), pc.add_parameters(CLASSES))


def loss(dy, model, examples):
    E, W, b = model
    terms = [dy.pickneglogsoftmax(W * dy.average([E[w] for w in words]) + b, label) for words, label in examples]
    return dy.esum(terms)


def values(model):
    E, W, b = model
    import numpy as np
    return np.concatenate([W.as_array().ravel(), b.as_array().ravel(), E.as_array().ravel()])


def main():
    mode, out_dir = sys.argv[1], sys.argv[2]
    import dynet_config
    dynet_config.set(random_seed=100 + RANK)  # different initial values on every rank
    import dynet as dy
    import numpy as np

    pc = dy.ParameterCollection()
    model = build(dy, pc)
    trainer = dy.AdamTrainer(pc, 0.05)
    dist = dy.mpi.DistributedTrainer(trainer)
    assert dist.size == 2 and dist.rank == RANK
    initial = values(model)
    total = 0.0
    for step, mb in enumerate(minibatches()):
        first, last = dist.shard(len(mb))
        dy.renew_cg()
        local = 0.0
        if mode == "fail" and RANK == 1 and step == 2:
            raise RuntimeError("rank 1 fails on purpose at step 2")
        if first < last:
            l = loss(dy, model, mb[first:last])
            local = l.value()
            l.backward()
        dist.update()
        total += dist.sum(local)
    np.savez(os.path.join(out_dir, "rank%d.npz" % RANK), initial=initial, final=values(model), total=total,
             dense_floats=dist.stats["dense_floats"])
    print("rank %d done" % RANK)


if __name__ == "__main__":
    main()
