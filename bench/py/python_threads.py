"""Python threads training one model: each thread builds its own graphs (`with dy.ComputationGraph():`) over
the shared parameters, and the extension releases the GIL while it computes, so the threads run at once.
Sentences (or examples) per second with 1, 2, ... threads, median of --reps runs, and the speedup over one
thread of the first row, for the ways updates meet the other threads' passes:
  synchronous   one shared trainer; update() takes the parameter lock exclusively: it waits for the passes
                in progress on other threads and stops them until it ends (the default: every forward or
                backward call sees fixed values)
  asynchronous  each thread inside `with dy.AsynchronousTraining():` (Hogwild-style) with one shared
                trainer: an update locks one parameter at a time and graphs read copies of the parameters,
                so updates and passes overlap; the shared trainer's updates take turns
  asynchronous-own  the same with a trainer per thread (SGD keeps no state: the same rule), whose updates
                run at once too
  own-models    for comparison, nothing shared: each thread trains its own copy of the model (same
                architecture and seed) with its own trainer, inside AsynchronousTraining (the parameter
                lock is process-wide: an exclusive update would stop the other model's passes too). What
                is left between the threads is the GIL, so this is the binding's own scaling

Models (random data, fixed seeds):
  tagger  a BiLSTM tagger (DyNet's most common model): embeddings 64, LSTMs 128 each way, 20 tags,
          sentences of 10-30 words, an SGD update per --minibatch sentences (one graph, autobatched when
          more than one)
  mlp     a minibatched MLP (784-256-256-10, minibatches of --batch, an SGD update per minibatch): the
          update of its 270k dense weights is a third of a step

    python python_threads.py [--model tagger|mlp] [--modes synchronous,asynchronous,asynchronous-own,own-models]
                             [--threads 1,2] [--steps 150] [--reps 5] [--minibatch 1] [--batch 32]
"""

import argparse
import contextlib
import json
import statistics
import sys
import threading
import time


def tagger(dy, np, minibatch):
    rng = np.random.RandomState(1)
    sentences = [(rng.randint(0, 5000, size=n), rng.randint(0, 20, size=n)) for n in rng.randint(10, 31, size=64)]
    pc = dy.ParameterCollection()
    E = pc.add_lookup_parameters((5000, 64))
    fwd, bwd = dy.VanillaLSTMBuilder(1, 64, 128, pc), dy.VanillaLSTMBuilder(1, 64, 128, pc)
    W, b = pc.add_parameters((20, 256)), pc.add_parameters((20,))

    def sentence_loss(words, tags):
        xs = [E[w] for w in words]
        fs = fwd.initial_state().transduce(xs)
        bs = bwd.initial_state().transduce(xs[::-1])[::-1]
        return dy.esum([dy.pickneglogsoftmax(W * dy.concatenate([f, r]) + b, t) for f, r, t in zip(fs, bs, tags)])

    def step(k, trainer):
        loss = dy.esum([sentence_loss(*sentences[(k * minibatch + j) % len(sentences)]) for j in range(minibatch)])
        loss.value()
        loss.backward()
        trainer.update()
        return minibatch
    return step, lambda: dy.SimpleSGDTrainer(pc, 0.1), "sentences"


def mlp(dy, np, batch):
    rng = np.random.RandomState(1)
    inputs = rng.rand(64, 784, batch).astype(np.float32)
    labels = rng.randint(0, 10, size=(64, batch))
    pc = dy.ParameterCollection()
    W1, b1 = pc.add_parameters((256, 784)), pc.add_parameters((256,))
    W2, b2 = pc.add_parameters((256, 256)), pc.add_parameters((256,))
    W3, b3 = pc.add_parameters((10, 256)), pc.add_parameters((10,))

    def step(k, trainer):
        x = dy.inputTensor(inputs[k % 64], batched=True)
        h = dy.rectify(W2 * dy.rectify(W1 * x + b1) + b2)
        loss = dy.sum_batches(dy.pickneglogsoftmax_batch(W3 * h + b3, list(labels[k % 64])))
        loss.value()
        loss.backward()
        trainer.update()
        return batch
    return step, lambda: dy.SimpleSGDTrainer(pc, 0.01), "examples"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tagger", choices=["tagger", "mlp"])
    ap.add_argument("--modes", default="synchronous,asynchronous,asynchronous-own,own-models")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=150, help="sentences (minibatches) per thread")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--minibatch", type=int, default=1, help="tagger: sentences per graph and update")
    ap.add_argument("--batch", type=int, default=32, help="mlp: examples per minibatch")
    args = ap.parse_args()
    sys.argv = sys.argv[:1] + ["--dynet-seed", "1", "--dynet-autobatch", "1" if args.minibatch > 1 else "0"]
    import numpy as np
    import dynet as dy

    def make_model():
        return tagger(dy, np, args.minibatch) if args.model == "tagger" else mlp(dy, np, args.batch)

    step, make_trainer, unit = make_model()
    shared_trainer = make_trainer()
    own_models = [make_model() for _ in range(max(int(t) for t in args.threads.split(",")))]

    def train(worker, steps, done, mode="synchronous"):
        if mode == "own-models":
            step_here, trainer = own_models[worker][0], own_models[worker][1]()
        else:
            step_here, trainer = step, make_trainer() if mode == "asynchronous-own" else shared_trainer
        n = 0
        with dy.AsynchronousTraining() if mode != "synchronous" else contextlib.nullcontext():
            for s in range(steps):
                with dy.ComputationGraph():
                    n += step_here(worker * 7919 + s, trainer)
        done.append(n)

    train(0, 20, [])  # warm-up
    base = None
    for mode in args.modes.split(","):
        for n in (int(t) for t in args.threads.split(",")):
            rates = []
            for _ in range(args.reps):
                done = []
                threads = [threading.Thread(target=train, args=(w, args.steps, done, mode)) for w in range(n)]
                start = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                rates.append(sum(done) / (time.perf_counter() - start))
            rate = statistics.median(rates)
            base = base or rate
            print(json.dumps({"model": args.model, "minibatch": args.minibatch if args.model == "tagger" else args.batch,
                              "updates": mode, "threads": n, unit + "_per_s": round(rate, 1),
                              "speedup": round(rate / base, 2)}), flush=True)


if __name__ == "__main__":
    main()
