"""Data preparation and the timed training loop shared by the Python benchmark scripts.

Everything here mirrors bench/tasks/common.cc and the C++ task programs: the same readers, the same
vocabulary rules, the same SplitMix64 example order, so every implementation trains on the same
examples in the same order and reports one JSON line in the same format.
"""

import argparse
import json
import os
import re
import resource
import time

MASK64 = (1 << 64) - 1

RARE_COUNT = 5  # tagger: words seen at most this often are rare


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def deterministic_shuffle(items, seed):
    rng = SplitMix64(seed)
    for i in range(len(items) - 1, 0, -1):
        j = rng.next() % (i + 1)
        items[i], items[j] = items[j], items[i]


class Vocab:
    def __init__(self):
        self.ids = {}

    def add(self, word):
        return self.ids.setdefault(word, len(self.ids))

    def get(self, word, unk):
        return self.ids.get(word, unk)

    def __contains__(self, word):
        return word in self.ids

    def __len__(self):
        return len(self.ids)


_SPACES = re.compile(r"[ \t\r\n]+")


def _tokens(line):
    return [t for t in _SPACES.split(line) if t]


def _read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")


def data_kind(data_dir):
    return "generated" if os.path.exists(os.path.join(data_dir, "GENERATED")) else "real"


# ---- rnnlm ----
def rnnlm_data(data_dir, minibatch, seed):
    """(vocabulary size, batches): length-sorted minibatches of id lists in shuffled order; id 0 is <s>."""
    vocab = Vocab()
    vocab.add("<s>")
    sentences = []
    for line in _read_lines(os.path.join(data_dir, "ptb", "ptb.train.txt")):
        tokens = _tokens(line)
        if tokens:
            sentences.append([vocab.add(w) for w in tokens])
    order = sorted(range(len(sentences)), key=lambda k: len(sentences[k]))  # stable, as std::stable_sort
    batches = [[sentences[k] for k in order[i:i + minibatch]] for i in range(0, len(order), minibatch)]
    deterministic_shuffle(batches, seed)
    return len(vocab), batches


# ---- tagger / tagger_char ----
def tagger_data(data_dir, seed, with_chars):
    """(n_words, n_chars, n_tags, sentences); a sentence is (word ids, char ids or None per word, tag ids)."""
    raw = []
    for line in _read_lines(os.path.join(data_dir, "tagging", "wikiner.train.txt")):
        tokens = _tokens(line)
        if tokens:
            raw.append([t.rsplit("|", 1) for t in tokens])
    counts = {}
    for s in raw:
        for w, _ in s:
            counts[w] = counts.get(w, 0) + 1
    words, chars, tags = Vocab(), Vocab(), Vocab()
    unk = words.add("<unk>")
    for s in raw:
        for w, _ in s:
            if counts[w] > RARE_COUNT:
                words.add(w)
    sentences = []
    for s in raw:
        word_ids, char_ids, tag_ids = [], [], []
        for w, t in s:
            word_ids.append(words.get(w, unk))
            spelled = None
            if with_chars and w not in words:
                spelled = [chars.add(bytes([b])) for b in w.encode("utf-8")]
            char_ids.append(spelled)
            tag_ids.append(tags.add(t))
        sentences.append((word_ids, char_ids, tag_ids))
    deterministic_shuffle(sentences, seed)
    return len(words), max(1, len(chars)), len(tags), sentences


# ---- treelstm ----
_TREE_TOKENS = re.compile(r"\(|\)|[^() \r\n]+")


def _parse_tree(line):
    """Post-order nodes [(left, right, word)] and the root label; split on ASCII space and parentheses."""
    tokens = _TREE_TOKENS.findall(line)
    nodes = []
    pos = 0

    def expect(token):
        nonlocal pos
        if pos >= len(tokens) or tokens[pos] != token:
            raise ValueError("expected '%s' in tree: %s" % (token, line[:80]))
        pos += 1

    def node():  # returns (index, label)
        nonlocal pos
        expect("(")
        label = int(tokens[pos])
        pos += 1
        if tokens[pos] == "(":
            left = node()[0]
            right = node()[0]
            nodes.append((left, right, None))
        else:
            nodes.append((-1, -1, tokens[pos]))
            pos += 1
        expect(")")
        return len(nodes) - 1, label

    _, root_label = node()
    return nodes, root_label


def treelstm_data(data_dir, seed):
    """(vocabulary size, examples); an example is ([(left, right, word id)] post-order, root label)."""
    vocab = Vocab()
    examples = []
    for line in _read_lines(os.path.join(data_dir, "sst", "train.txt")):
        if "(" not in line:
            continue
        nodes, label = _parse_tree(line)
        examples.append(([(l, r, vocab.add(w) if w is not None else 0) for l, r, w in nodes], label))
    deterministic_shuffle(examples, seed)
    return len(vocab), examples


# ---- parser ----
def read_conllu(path):
    sentences, cur = [], []
    for line in _read_lines(path):
        line = line.rstrip("\r")
        if not line:
            if cur:
                sentences.append(cur)
            cur = []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError("a CoNLL-U line does not have 10 columns: " + line[:80])
        if "-" in cols[0] or "." in cols[0]:
            continue
        cur.append((cols[1], cols[3], int(cols[6]), cols[7].split(":")[0]))
    if cur:
        sentences.append(cur)
    return sentences


def arc_standard_oracle(heads, labels, n_labels):
    """Static oracle: [(positions (s0, s1, s2, b0; -1 absent), action)], or None if not projective.

    Actions: 0 SHIFT, 1 + l LEFT-ARC(l), 1 + L + l RIGHT-ARC(l); positions index ROOT w1..wn.
    """
    n = len(heads)
    children = [0] * (n + 1)
    attached = [0] * (n + 1)
    for h in heads:
        children[h] += 1
    stack = [0]
    nxt = 1
    out = []
    while nxt <= n or len(stack) > 1:
        depth = len(stack)
        positions = (stack[-1], stack[-2] if depth >= 2 else -1, stack[-3] if depth >= 3 else -1,
                     nxt if nxt <= n else -1)
        if depth >= 2:
            s0, s1 = stack[-1], stack[-2]
            if s1 != 0 and heads[s1 - 1] == s0 and attached[s1] == children[s1]:
                out.append((positions, 1 + labels[s1 - 1]))
                del stack[-2]
                attached[s0] += 1
                continue
            if heads[s0 - 1] == s1 and attached[s0] == children[s0]:
                out.append((positions, 1 + n_labels + labels[s0 - 1]))
                stack.pop()
                attached[s1] += 1
                continue
        if nxt > n:
            return None
        out.append((positions, 0))
        stack.append(nxt)
        nxt += 1
    return out


def parser_data(data_dir, seed):
    """(n_words, n_tags, n_actions, examples); an example is (word ids, tag ids, transitions), ROOT first."""
    raw = read_conllu(os.path.join(data_dir, "ud-ewt", "en_ewt-ud-train.conllu"))
    counts = {}
    label_names = set()
    for s in raw:
        for w, _, _, l in s:
            counts[w] = counts.get(w, 0) + 1
            label_names.add(l)
    words, tags, labels = Vocab(), Vocab(), Vocab()
    unk = words.add("<unk>")
    root = words.add("<root>")
    tags.add("<root>")
    for l in sorted(label_names, key=lambda s: s.encode("utf-8")):
        labels.add(l)
    for s in raw:
        for w, _, _, _ in s:
            if counts[w] >= 2:
                words.add(w)
    examples = []
    for s in raw:
        heads = [h for _, _, h, _ in s]
        if any(h < 0 or h > len(s) for h in heads):
            raise ValueError("a head is out of range")
        transitions = arc_standard_oracle(heads, [labels.get(l, 0) for _, _, _, l in s], len(labels))
        if transitions is None:
            continue
        word_ids = [root] + [words.get(w, unk) for w, _, _, _ in s]
        tag_ids = [0] + [tags.add(t) for _, t, _, _ in s]
        examples.append((word_ids, tag_ids, transitions))
    deterministic_shuffle(examples, seed)
    return len(words), len(tags), 1 + 2 * len(labels), examples


# ---- bilstm (synthetic, fixed length) ----
BILSTM_LENGTH, BILSTM_VOCAB, BILSTM_TAGS, BILSTM_SEQUENCES = 40, 10000, 20, 4096


def bilstm_data(seed):
    """Sequences (word ids, tag ids) of BILSTM_LENGTH words drawn from SplitMix64; tag = word % tags."""
    rng = SplitMix64(seed)
    out = []
    for _ in range(BILSTM_SEQUENCES):
        words = [rng.next() % BILSTM_VOCAB for _ in range(BILSTM_LENGTH)]
        out.append((words, [w % BILSTM_TAGS for w in words]))
    return out


# ---- command line, timing and the result line ----
TASKS = ("rnnlm", "tagger", "tagger_char", "treelstm", "parser", "bilstm")
UNITS = {"rnnlm": ("words/s", "nll per word"), "tagger": ("words/s", "nll per word"),
         "tagger_char": ("words/s", "nll per word"), "treelstm": ("sentences/s", "nll per sentence"),
         "parser": ("sentences/s", "nll per transition"), "bilstm": ("words/s", "nll per word")}


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("task", choices=TASKS)
    p.add_argument("--data", default="", help="directory with ptb/, tagging/, sst/, ud-ewt/ (bilstm needs none)")
    p.add_argument("--steps", type=int, default=20, help="measured training steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--minibatch", type=int, default=1, help="rnnlm sentences per batch")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--update-batch", type=int, default=1, help="examples per graph (one update)")
    p.add_argument("--autobatch", type=int, default=0, choices=(0, 1, 2), help="DyNet's --dynet-autobatch")
    p.add_argument("--manual", type=int, default=0, choices=(0, 1), help="1: the hand-batched version")
    if extra:
        extra(p)
    args = p.parse_args()
    if args.minibatch < 1 or args.threads < 1 or args.update_batch < 1 or args.steps < 0 or args.warmup < 0:
        p.error("--minibatch, --update-batch and --threads must be >= 1, --steps and --warmup >= 0")
    if not args.data and args.task != "bilstm":
        p.error("--data DIR is required for " + args.task)
    return args


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def train_and_time(args, impl, step):
    """step(k) trains on example k and returns (summed loss, loss terms, units); prints the JSON line."""
    for k in range(args.warmup):
        step(k)
    loss_sum = loss_terms = units = 0.0
    faults, cpu = minor_faults(), cpu_seconds()
    start = time.perf_counter()
    for k in range(args.steps):
        loss, terms, n = step(args.warmup + k)
        loss_sum += loss
        loss_terms += terms
        units += n
    seconds = time.perf_counter() - start
    faults, cpu = minor_faults() - faults, cpu_seconds() - cpu
    unit, loss_unit = UNITS[args.task]
    print(json.dumps({
        "task": args.task, "impl": impl, "minibatch": args.minibatch, "steps": args.steps,
        "warmup": args.warmup, "units": units, "unit": unit, "seconds": seconds,
        "throughput": units / seconds if seconds > 0 else 0.0,
        "loss": loss_sum / loss_terms if loss_terms else 0.0, "loss_unit": loss_unit,
        "peak_rss_mb": round(peak_rss_mb(), 1), "minor_faults_per_step": faults / args.steps if args.steps else 0.0,
        "data": "synthetic" if args.task == "bilstm" else data_kind(args.data), "threads": args.threads,
        "update_batch": args.update_batch, "autobatch": args.autobatch, "manual": bool(args.manual),
        "cpu_seconds": cpu}),
        flush=True)
