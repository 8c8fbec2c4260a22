"""Runs the C++ demo (build/examples/demo) with autobatching on and off and plots, per epoch, the loss and
accuracies of the autobatched run and the trees per second of both: README's docs/images/demo.png.

    .venv/bin/python examples/python/plot_demo.py --out docs/images/demo.png [--demo build/examples/demo]
"""
import argparse
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EPOCH = re.compile(r"^epoch +(\d+) +loss ([\d.]+) +train acc ([\d.]+) +dev acc ([\d.]+) +(\d+) trees/s$", re.M)


def run(demo, autobatch, extra):
    cmd = [demo, "--autobatch", str(autobatch)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    print("$ " + " ".join(cmd[:1] + cmd[1:]))
    print(out, end="")
    rows = [tuple(float(v) for v in m) for m in EPOCH.findall(out)]
    if not rows:
        sys.exit("plot_demo.py: no epoch lines in the output of %s" % " ".join(cmd))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--demo", default=os.path.join(REPO, "build", "examples", "demo"), help="the demo binary")
    p.add_argument("--out", default=os.path.join(REPO, "docs", "images", "demo.png"), help="the PNG to write")
    p.add_argument("--seed", type=int, default=1, help="passed to the demo as --dynet-seed")
    args, extra = p.parse_known_args()  # anything else goes to the demo, e.g. --epochs 5
    extra = ["--dynet-seed", str(args.seed)] + extra
    on, off = run(args.demo, 1, extra), run(args.demo, 0, extra)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    epochs = [r[0] for r in on]
    left.plot(epochs, [r[1] for r in on], marker="o", label="training loss")
    left.plot(epochs, [r[2] for r in on], marker="s", label="training accuracy")
    left.plot(epochs, [r[3] for r in on], marker="^", label="dev accuracy")
    left.set_xlabel("epoch")
    left.set_title("Tree-LSTM demo, autobatched minibatches")
    left.legend(fontsize=8)
    right.plot(epochs, [r[4] for r in on], marker="o", label="--dynet-autobatch 1")
    right.plot([r[0] for r in off], [r[4] for r in off], marker="s", label="autobatching off")
    right.set_xlabel("epoch")
    right.set_ylabel("trees / s (training)")
    right.set_ylim(bottom=0)
    right.set_title("throughput, same graphs")
    right.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=90)
    print("plot written to %s" % args.out)


if __name__ == "__main__":
    main()
