"""An LSTM language model on the Penn Treebank (../shared/data/ptb; generated sentences when absent),
trained on minibatches of sentences with batched lookups and losses."""
import math
import os
import random
import time

from common import parser, plot, progress, shuffled  # before dynet: it passes --seed on as --dynet-seed
import dynet as dy


p = parser(__doc__)
p.add_argument("--minibatch", type=int, default=16)
p.add_argument("--layers", type=int, default=1)
p.add_argument("--embed", type=int, default=64)
p.add_argument("--hidden", type=int, default=128)
args = p.parse_args()


def read(path, limit):
    with open(path) as f:
        sents = [line.split() for line in f if line.strip()]
    return sents[:limit] if limit else sents


def generated(n, seed):
    rng = random.Random(seed)
    words = ["w%d" % k for k in range(200)]
    return [[rng.choice(words[: 20 + (k % 180)]) for _ in range(rng.randint(3, 15))] for k in range(n)]


train_path = os.path.join(args.data, "ptb", "ptb.train.txt")
if os.path.exists(train_path):
    train = read(train_path, args.limit or 2000)
    dev = read(os.path.join(args.data, "ptb", "ptb.valid.txt"), 200)
else:
    print("no PTB data in %s: using generated sentences" % args.data)
    train, dev = generated(args.limit or 1000, 1), generated(100, 2)

vocab = {"<s>": 0, "<unk>": 1}
for s in train:
    for w in s:
        vocab.setdefault(w, len(vocab))
ids = lambda s: [vocab.get(w, 1) for w in s]

pc = dy.ParameterCollection()
E = pc.add_lookup_parameters((len(vocab), args.embed))
lstm = dy.VanillaLSTMBuilder(args.layers, args.embed, args.hidden, pc)
W = pc.add_parameters((len(vocab), args.hidden))
bias = pc.add_parameters((len(vocab),), init=dy.ConstInitializer(0.0))
trainer = dy.AdamTrainer(pc)


def batch_loss(batch):
    """Summed negative log-likelihood of a minibatch; sentences are padded and the padding masked."""
    dy.renew_cg()
    longest = max(len(s) for s in batch)
    state = lstm.initial_state()
    losses = []
    for t in range(longest + 1):
        prev = [0 if t == 0 else (s[t - 1] if t - 1 < len(s) else 0) for s in batch]
        gold = [s[t] if t < len(s) else 0 for s in batch]
        state = state.add_input(dy.lookup_batch(E, prev))
        loss = dy.pickneglogsoftmax_batch(dy.affine_transform([bias, W, state.output()]), gold)
        if any(t > len(s) for s in batch):
            mask = dy.inputTensor([[1.0 if t <= len(s) else 0.0 for s in batch]], batched=True)
            loss = dy.cmult(loss, mask)
        losses.append(loss)
    return dy.sum_batches(dy.esum(losses))


def batches(sents, size):
    sents = sorted(sents, key=len)  # similar lengths together: little padding
    return [[ids(s) for s in sents[k:k + size]] for k in range(0, len(sents), size)]


train_batches, dev_batches = batches(train, args.minibatch), batches(dev, args.minibatch)
history = {"train ppl": [], "dev ppl": []}
for epoch in range(args.epochs):
    total, words, start = 0.0, 0, time.time()
    bar = progress(shuffled(train_batches, args.seed + epoch), "epoch %d" % (epoch + 1))
    for batch in bar:
        loss = batch_loss(batch)
        total += loss.value()
        words += sum(len(s) + 1 for s in batch)
        loss.backward()
        trainer.update()
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(ppl="%.1f" % math.exp(total / words), wps="%.0f" % (words / (time.time() - start)),
                            refresh=False)
    dev_total = sum(batch_loss(b).value() for b in dev_batches)
    dev_words = sum(len(s) + 1 for b in dev_batches for s in b)
    history["train ppl"].append(math.exp(total / words))
    history["dev ppl"].append(math.exp(dev_total / dev_words))
    print("epoch %d: train ppl %.1f, dev ppl %.1f, %.0f words/s" % (
        epoch + 1, history["train ppl"][-1], history["dev ppl"][-1], words / (time.time() - start)))
plot(args.plot, history, "perplexity")
