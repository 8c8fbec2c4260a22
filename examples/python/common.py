"""Helpers shared by the Python examples: data location, a progress bar, a loss plot."""
import argparse
import os
import random

try:
    from tqdm import tqdm
except ImportError:  # the examples still run without tqdm
    def tqdm(iterable, **kwargs):
        return iterable

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data")


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="train on the first N examples only (0: all)")
    p.add_argument("--data", default=DATA, help="the data folder (generated data when absent)")
    p.add_argument("--plot", default="", help="save a loss/accuracy plot to this PNG file")
    p.add_argument("--seed", type=int, default=1)
    return p


def progress(items, desc):
    return tqdm(items, desc=desc, unit="ex", dynamic_ncols=True, leave=False)


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
