"""Per-op cost of a dynamic graph driven from Python: the 1000-step chain h = tanh(W h + b) (h: 64) of
bench/graph_overhead.cc, built, run forward and backward; prints one JSON line with microseconds per op
(3 ops per step: product, sum, tanh), the median over --reps rounds after warm-up.

    python graph_overhead.py {torch,dynet-py,ours-py} [--steps 1000] [--reps 20] [--module dynet]
"""

import argparse
import json
import resource
import statistics
import sys
import time


def torch_round(steps):
    import torch
    torch.manual_seed(1)
    # W = I and b = 0, as in bench/graph_overhead.cc (see there): random weights let the gradients of the
    # early steps go subnormal for many draws, which costs Intel cores a microcode assist each.
    w = torch.eye(64).requires_grad_()
    b = torch.zeros(64).requires_grad_()
    x0 = torch.full((64,), 0.1)

    def run():
        start = time.perf_counter()
        h = x0
        for _ in range(steps):
            h = torch.tanh(w @ h + b)
        h.sum().backward()
        w.grad = b.grad = None
        return time.perf_counter() - start

    return run


def dynet_round(steps, module, build_only=False):
    sys.argv = sys.argv[:1]
    if module == "dynet":
        import dynet_config
        dynet_config.set(random_seed=1)
    import importlib
    dy = importlib.import_module(module)
    pc = dy.ParameterCollection()
    pw = pc.add_parameters((64, 64), init=dy.IdentityInitializer())
    pb = pc.add_parameters((64,), init=dy.ConstInitializer(0))
    x0 = [0.1] * 64

    def run():
        start = time.perf_counter()
        dy.renew_cg()
        w, b = dy.parameter(pw), dy.parameter(pb)
        h = dy.inputVector(x0)
        for _ in range(steps):
            h = dy.tanh(w * h + b)
        loss = dy.sum_elems(h)
        built = time.perf_counter()
        if not build_only:
            loss.value()
            loss.backward()
        return (built if build_only else time.perf_counter()) - start

    run.model = pc  # DyNet frees the parameters with the Python collection object
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("impl", choices=["torch", "dynet-py", "ours-py"])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--module", default="dynet")
    p.add_argument("--build-only", action="store_true",
                   help="time only building the graph from Python (DyNet APIs; the figure the Python binding decides)")
    args = p.parse_args()
    if args.impl == "torch":
        import torch
        torch.set_num_threads(args.threads)
        run = torch_round(args.steps)
    else:
        run = dynet_round(args.steps, args.module, args.build_only)
    for _ in range(3):
        run()
    times = [run() for _ in range(max(1, args.reps))]
    us_per_op = statistics.median(times) / (3 * args.steps) * 1e6
    print(json.dumps({"task": "graph_overhead" + ("_build" if args.build_only else ""), "impl": args.impl, "throughput": us_per_op, "unit": "us/op",
                      "loss": None, "steps": args.steps, "reps": args.reps,
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
                      "data": "none", "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
