"""A BiLSTM part-of-speech / named-entity tagger (../shared/data/tagging; generated data when absent)."""
import os
import random
import time

from common import parser, plot, progress, shuffled  # before dynet: it passes --seed on as --dynet-seed
import dynet as dy


p = parser(__doc__)
p.add_argument("--train-file", default="tagging/wikiner.train.txt")
p.add_argument("--dev-file", default="tagging/wikiner.dev.txt")
args = p.parse_args()


def read(path, limit):
    out = []
    with open(path) as f:
        for line in f:
            pairs = [tok.rsplit("|", 1) for tok in line.split()]
            if pairs:
                out.append(([w for w, _ in pairs], [t for _, t in pairs]))
            if limit and len(out) >= limit:
                break
    return out


def generated(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = ["w%d" % rng.randint(0, 99) for _ in range(rng.randint(3, 12))]
        out.append((words, ["T%d" % (int(w[1:]) % 5) for w in words]))  # the tag is a function of the word
    return out


train_path = os.path.join(args.data, args.train_file)
if os.path.exists(train_path):
    train = read(train_path, args.limit or 2000)
    dev_path = os.path.join(args.data, args.dev_file)
    dev = read(dev_path, 300) if os.path.exists(dev_path) else train[-300:]
else:
    print("no tagging data in %s: using generated sentences" % args.data)
    train, dev = generated(args.limit or 800, 1), generated(100, 2)

words, tags = {"<unk>": 0}, {}
for ws, ts in train:
    for w in ws:
        words.setdefault(w, len(words))
    for t in ts:
        tags.setdefault(t, len(tags))

pc = dy.ParameterCollection()
E = pc.add_lookup_parameters((len(words), 64))
bilstm = dy.BiRNNBuilder(1, 64, 100, pc, dy.VanillaLSTMBuilder)
H = pc.add_parameters((32, 100))
hb = pc.add_parameters((32,), init=dy.ConstInitializer(0.0))
O = pc.add_parameters((len(tags), 32))
ob = pc.add_parameters((len(tags),), init=dy.ConstInitializer(0.0))
trainer = dy.AdamTrainer(pc)


def scores(ws):
    dy.renew_cg()
    vecs = bilstm.transduce([dy.lookup(E, words.get(w, 0)) for w in ws])
    return [dy.affine_transform([ob, O, dy.tanh(dy.affine_transform([hb, H, v]))]) for v in vecs]


history = {"train loss": [], "dev accuracy": []}
for epoch in range(args.epochs):
    total, n, start = 0.0, 0, time.time()
    bar = progress(shuffled(train, args.seed + epoch), "epoch %d" % (epoch + 1))
    for ws, ts in bar:
        loss = dy.esum([dy.pickneglogsoftmax(s, tags[t]) for s, t in zip(scores(ws), ts)])
        total += loss.value()
        n += len(ws)
        loss.backward()
        trainer.update()
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss="%.3f" % (total / n), wps="%.0f" % (n / (time.time() - start)),
                            refresh=False)
    correct = count = 0
    for ws, ts in dev:
        for s, t in zip(scores(ws), ts):
            correct += int(s.npvalue().argmax()) == tags.get(t, -1)
            count += 1
    history["train loss"].append(total / n)
    history["dev accuracy"].append(correct / count)
    print("epoch %d: loss %.3f, dev accuracy %.3f, %.0f words/s" % (
        epoch + 1, total / n, correct / count, n / (time.time() - start)))
plot(args.plot, history, "loss / accuracy")
