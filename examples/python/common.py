"""Helpers shared by the Python examples: the seed, data location, a progress bar, a loss plot.

Import this module before `dynet`: it hands the example's --seed to DyNet (as --dynet-seed, read at
`import dynet`), so a run with the same --seed initialises the same parameters and prints the same losses.
"""
import argparse
import os
import random
import sys

try:
    from tqdm import tqdm
except ImportError:  # the examples still run without tqdm
    tqdm = None

DEFAULT_SEED = 1


def _seed_dynet():
    """--seed N (default DEFAULT_SEED) becomes --dynet-seed N unless the command line names one itself."""
    argv = sys.argv[1:]
    if "dynet" in sys.modules:
        raise RuntimeError("examples/python/common.py: import it before dynet, or --seed cannot seed DyNet")
    if any(a.replace("_", "-").split("=")[0] == "--dynet-seed" for a in argv):
        return
    seed = str(DEFAULT_SEED)
    for i, a in enumerate(argv):
        if a == "--seed" and i + 1 < len(argv):
            seed = argv[i + 1]
        elif a.startswith("--seed="):
            seed = a.split("=", 1)[1]
    # DyNet takes the seed 0 as "draw one"; keep it for --seed 0 as well, as DyNet users would expect.
    sys.argv[1:1] = ["--dynet-seed", seed]


_seed_dynet()

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data")


def parser(description):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=2, help="passes over the training data")
    p.add_argument("--limit", type=int, default=0, help="train on the first N examples only (0: all)")
    p.add_argument("--data", default=DATA, help="the data folder (generated data when absent)")
    p.add_argument("--plot", default="", help="save a loss/accuracy plot to this PNG file")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help="seeds the data order and DyNet's parameters (as --dynet-seed)")
    return p


def interactive():
    """A bar is drawn only for a person watching: in a log it would be a flood of redraws."""
    return sys.stderr.isatty() and sys.stdout.isatty()


def progress(items, desc):
    """A progress bar over items, redrawn at most twice a second (every redraw costs the loop time);
    the plain items when tqdm is missing or the output is not a terminal. The examples print a summary
    line per epoch either way. Callers pass refresh=False to set_postfix, which otherwise redraws."""
    if tqdm is None or not interactive():
        return items
    return tqdm(items, desc=desc, unit="ex", dynamic_ncols=True, leave=False, mininterval=0.5, miniters=50)


def plot(path, series, ylabel="loss"):
    """series: {name: [value per epoch]}; writes a PNG when matplotlib is installed."""
    if not path:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no plot written")
        return
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name, values in series.items():
        ax.plot(range(1, len(values) + 1), values, marker="o", label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("plot written to %s" % path)


def shuffled(items, seed):
    items = list(items)
    random.Random(seed).shuffle(items)
    return items
