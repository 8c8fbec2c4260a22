"""A binary Tree-LSTM sentiment classifier on the Stanford Sentiment Treebank (../shared/data/sst;
generated trees when absent): the graph follows each sentence's parse tree."""
import os
import random
import time

from common import parser, plot, progress, shuffled  # before dynet: it passes --seed on as --dynet-seed
import dynet as dy


p = parser(__doc__)
p.add_argument("--hidden", type=int, default=64)
args = p.parse_args()


class Tree:
    def __init__(self, label, children=None, word=None):
        self.label, self.children, self.word = label, children or [], word


def parse(text):
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node():
        nonlocal pos
        assert tokens[pos] == "("
        label = int(tokens[pos + 1])
        pos += 2
        if tokens[pos] != "(":
            word = tokens[pos]
            pos += 2  # word and ")"
            return Tree(label, word=word)
        kids = []
        while tokens[pos] == "(":
            kids.append(node())
        pos += 1
        return Tree(label, kids)

    return node()


def generated(n, seed):
    rng = random.Random(seed)

    def make(depth):
        if depth == 0 or rng.random() < 0.3:
            k = rng.randint(0, 49)
            return Tree(k % 5, word="w%d" % k)
        left, right = make(depth - 1), make(depth - 1)
        return Tree(max(left.label, right.label), [left, right])

    return [make(4) for _ in range(n)]


path = os.path.join(args.data, "sst", "train.txt")
if os.path.exists(path):
    with open(path) as f:
        train = [parse(line) for line in f if line.strip()][: args.limit or 1500]
    with open(os.path.join(args.data, "sst", "dev.txt")) as f:
        dev = [parse(line) for line in f if line.strip()][:200]
else:
    print("no SST data in %s: using generated trees" % args.data)
    train, dev = generated(args.limit or 600, 1), generated(100, 2)

vocab = {"<unk>": 0}


def collect(t):
    if t.word is not None:
        vocab.setdefault(t.word, len(vocab))
    for c in t.children:
        collect(c)


for t in train:
    collect(t)

hid = args.hidden
pc = dy.ParameterCollection()
E = pc.add_lookup_parameters((len(vocab), 64))
WL = pc.add_parameters((3 * hid, 64))      # leaves: i, o, u
bL = pc.add_parameters((3 * hid,), init=dy.ConstInitializer(0.0))
UL = pc.add_parameters((5 * hid, hid))     # internal nodes: i, f_left, f_right, o, u
UR = pc.add_parameters((5 * hid, hid))
bN = pc.add_parameters((5 * hid,), init=dy.ConstInitializer(0.0))
out = pc.add_parameters((5, hid))
ob = pc.add_parameters((5,), init=dy.ConstInitializer(0.0))
trainer = dy.AdamTrainer(pc)


def encode(t):
    """(h, c) of a subtree: the Tree-LSTM recursion of Tai et al. (2015), binary form."""
    if t.word is not None:
        g = dy.affine_transform([bL, WL, dy.lookup(E, vocab.get(t.word, 0))])
        i, o, u = (dy.pick_range(g, k * hid, (k + 1) * hid) for k in range(3))
        c = dy.cmult(dy.logistic(i), dy.tanh(u))
        return dy.cmult(dy.logistic(o), dy.tanh(c)), c
    if len(t.children) == 1:
        return encode(t.children[0])
    (hl, cl), (hr, cr) = encode(t.children[0]), encode(t.children[1])
    g = dy.affine_transform([bN, UL, hl, UR, hr])
    i, fl, fr, o, u = (dy.pick_range(g, k * hid, (k + 1) * hid) for k in range(5))
    c = (dy.cmult(dy.logistic(i), dy.tanh(u)) + dy.cmult(dy.logistic(fl), cl) + dy.cmult(dy.logistic(fr), cr))
    return dy.cmult(dy.logistic(o), dy.tanh(c)), c


def logits(t):
    dy.renew_cg()
    h, _ = encode(t)
    return dy.affine_transform([ob, out, h])


history = {"train loss": [], "dev accuracy": []}
for epoch in range(args.epochs):
    total, start = 0.0, time.time()
    bar = progress(shuffled(train, args.seed + epoch), "epoch %d" % (epoch + 1))
    for k, t in enumerate(bar):
        loss = dy.pickneglogsoftmax(logits(t), t.label)
        total += loss.value()
        loss.backward()
        trainer.update()
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss="%.3f" % (total / (k + 1)), sps="%.0f" % ((k + 1) / (time.time() - start)),
                            refresh=False)
    acc = sum(int(logits(t).npvalue().argmax()) == t.label for t in dev) / len(dev)
    history["train loss"].append(total / len(train))
    history["dev accuracy"].append(acc)
    print("epoch %d: loss %.3f, dev accuracy %.3f, %.0f sentences/s" % (
        epoch + 1, total / len(train), acc, len(train) / (time.time() - start)))
plot(args.plot, history, "loss / accuracy")
