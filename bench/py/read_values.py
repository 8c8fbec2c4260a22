"""What a value read costs on a partly computed graph: a chart parser's pattern. Builds F features
h_i = tanh(W x_i) and then S scores s = dot(h_i, h_j) over pairs (i, j), all before any read, then reads
every score's value one by one in creation order (each read computes the features it needs first). The
graph keeps features that no read needed so far uncomputed until late, so a read whose cost grows with the
graph's uncomputed part, not with what it computes, shows here. Prints one JSON line per graph size:
microseconds per read (median over --reps graphs), for this module and autobatching strategy.

    python read_values.py [--module dynet|_dynet] [--autobatch 0|1|2] [--sizes 1000,10000,100000] [--reps 3]

The original DyNet runs it unchanged (its Python module is `dynet` too): bench/run's venv or .venv-original.
"""

import argparse
import json
import random
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", default="dynet")
    ap.add_argument("--autobatch", type=int, default=0)
    ap.add_argument("--sizes", default="1000,10000,100000", help="graph sizes in nodes (about)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sys.argv = sys.argv[:1] + ["--dynet-autobatch", str(args.autobatch), "--dynet-seed", "1"]
    dy = __import__(args.module)
    pc = dy.ParameterCollection()
    hidden = 16
    W = pc.add_parameters((hidden, hidden))
    E = pc.add_lookup_parameters((1000, hidden))
    rng = random.Random(1)
    for size in (int(s) for s in args.sizes.split(",")):
        # F features take 3 nodes each (lookup, product, tanh), the S scores 1 (dot product) plus W's node.
        features = max(2, size // 8)
        scores = size - 3 * features
        pairs = [(rng.randrange(features), rng.randrange(features)) for _ in range(scores)]
        pairs.sort(key=lambda p: max(p))  # a score after the features it reads, as a chart parser builds them
        times = []
        for _ in range(args.reps):
            dy.renew_cg()
            h = [dy.tanh(W * dy.lookup(E, i % 1000)) for i in range(features)]
            s = [dy.dot_product(h[i], h[j]) for i, j in pairs]
            start = time.perf_counter()
            total = 0.0
            for e in s:
                total += e.value()
            times.append((time.perf_counter() - start) / len(s))
        print(json.dumps({"module": args.module, "autobatch": args.autobatch, "nodes": 3 * features + scores,
                          "reads": scores, "us_per_read": round(statistics.median(times) * 1e6, 3),
                          "checksum": round(total, 3)}), flush=True)


if __name__ == "__main__":
    main()
