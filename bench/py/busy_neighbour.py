"""A CNN text classifier's epoch with the machine idle, then with one busy neighbour process (a spinning
loop that keeps a core): small work must never wait on a thread team whose worker the neighbour keeps off
its core. Each sentence: embeddings (1 x len x 100), a width-3 convolution to 100 filters (about 0.1-1M
multiply-adds), ReLU, max over time, softmax loss, backward, SGD update. Prints one JSON line per
condition: seconds per epoch (median over --epochs) and the sentences slower than 5 ms.

    python busy_neighbour.py [--module dynet] [--sentences 2000] [--epochs 3]

The original DyNet runs it unchanged: .venv-original/bin/python bench/py/busy_neighbour.py
"""

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import time


def spin():
    while True:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", default="dynet")
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    sys.argv = sys.argv[:1] + ["--dynet-seed", "1"]
    dy = __import__(args.module)
    rng = random.Random(1)
    vocab, emb_dim, filters, width, classes = 5000, 100, 100, 3, 5
    data = [([rng.randrange(vocab) for _ in range(rng.randint(5, 40))], rng.randrange(classes))
            for _ in range(args.sentences)]
    pc = dy.ParameterCollection()
    emb = pc.add_lookup_parameters((vocab, emb_dim))
    filt = pc.add_parameters((1, width, emb_dim, filters))
    fb = pc.add_parameters((filters,))
    W = pc.add_parameters((classes, filters))
    b = pc.add_parameters((classes,))
    trainer = dy.SimpleSGDTrainer(pc, 0.05)

    def epoch():
        slow = 0
        start = time.perf_counter()
        for words, label in data:
            t0 = time.perf_counter()
            dy.renew_cg()
            x = dy.reshape(dy.transpose(dy.concatenate_cols([emb[w] for w in words])), (1, len(words), emb_dim))
            h = dy.rectify(dy.conv2d_bias(x, filt, fb, stride=[1, 1], is_valid=True))
            h = dy.max_dim(dy.reshape(h, (len(words) - width + 1, filters)), d=0)
            loss = dy.pickneglogsoftmax(W * h + b, label)
            loss.value()
            loss.backward()
            trainer.update()
            slow += time.perf_counter() - t0 > 0.005
        return time.perf_counter() - start, slow

    epoch()  # warm-up: oneDNN primitives for each sentence length
    for condition in ("idle", "busy neighbour"):
        neighbour = multiprocessing.Process(target=spin, daemon=True) if condition != "idle" else None
        if neighbour:
            neighbour.start()
            time.sleep(0.2)
        runs = [epoch() for _ in range(args.epochs)]
        if neighbour:
            neighbour.terminate()
            neighbour.join()
        print(json.dumps({"module": args.module, "condition": condition,
                          "seconds_per_epoch": round(statistics.median(r[0] for r in runs), 3),
                          "slow_sentences": int(statistics.median(r[1] for r in runs)),
                          "sentences": len(data)}), flush=True)


if __name__ == "__main__":
    main()
