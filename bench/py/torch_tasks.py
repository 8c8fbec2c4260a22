"""The benchmark tasks in PyTorch eager, written the way a PyTorch user would write them.

Same architectures, sizes, data and example order as the C++ programs in bench/tasks. Embedding
tables take sparse gradients (nn.Embedding(sparse=True)) updated by SparseAdam, everything else by
Adam: with dense updates, Adam's step over the whole embedding table would dominate every sentence,
while DyNet updates only the looked-up rows. No gradient clipping (our trainers run with it off too).
rnnlm runs nn.LSTM over the padded minibatch; the other tasks train one example at a time.

    python torch_tasks.py TASK --data DIR [--steps N] [--warmup N] [--minibatch N] [--threads N] [--device cuda]

--device cuda puts the model and every tensor on the first CUDA device (bench/run --device gpu).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import benchdata

DEVICE = torch.device("cpu")  # main() sets it from --device


def on_device(values):
    return torch.tensor(values, device=DEVICE)


def make_optimizers(model):
    sparse = [m.weight for m in model.modules() if isinstance(m, nn.Embedding)]
    sparse_ids = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if id(p) not in sparse_ids]
    return [torch.optim.Adam(dense, lr=1e-3), torch.optim.SparseAdam(sparse, lr=1e-3)]


def train_step(optimizers, loss):
    for opt in optimizers:
        opt.zero_grad()
    loss.backward()
    for opt in optimizers:
        opt.step()
    return loss.item()


class LanguageModel(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, 128, sparse=True)
        self.lstm = nn.LSTM(128, 256)
        self.out = nn.Linear(256, vocab)

    def forward(self, inputs, targets):
        h, _ = self.lstm(self.embed(inputs))
        logits = self.out(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1, reduction="sum")


def run_rnnlm(args):
    vocab, batches = benchdata.rnnlm_data(args.data, args.minibatch, args.seed)
    model = LanguageModel(vocab).to(DEVICE)
    optimizers = make_optimizers(model)

    def step(k):
        batch = batches[k % len(batches)]
        longest = max(len(s) for s in batch)
        # time-major; <s> (id 0) starts every sentence and ends it; -1 marks padding in the targets
        inputs = torch.zeros(longest + 1, len(batch), dtype=torch.long)
        targets = torch.full((longest + 1, len(batch)), -1, dtype=torch.long)
        for b, s in enumerate(batch):
            inputs[1:len(s) + 1, b] = torch.tensor(s)
            targets[:len(s), b] = torch.tensor(s)
            targets[len(s), b] = 0
        loss = train_step(optimizers, model(inputs.to(DEVICE), targets.to(DEVICE)))
        words = sum(len(s) + 1 for s in batch)
        return loss, words, words

    return step


class Tagger(nn.Module):
    def __init__(self, words, chars, tags, with_chars):
        super().__init__()
        self.embed = nn.Embedding(words, 128, sparse=True)
        self.lstm = nn.LSTM(128, 50, bidirectional=True)
        self.hidden = nn.Linear(100, 32)
        self.out = nn.Linear(32, tags)
        if with_chars:
            self.char_embed = nn.Embedding(chars, 20, sparse=True)
            self.char_lstm = nn.LSTM(20, 64, bidirectional=True)

    def spell(self, chars):
        _, (h, _) = self.char_lstm(self.char_embed(chars).unsqueeze(1))
        return h.view(-1)  # final forward state, final backward state

    def forward(self, words, spellings, tags):
        x = self.embed(words)
        if any(c is not None for c in spellings):
            x = torch.stack([self.spell(c) if c is not None else x[i] for i, c in enumerate(spellings)])
        h, _ = self.lstm(x.unsqueeze(1))
        scores = self.out(torch.tanh(self.hidden(h.squeeze(1))))
        return F.cross_entropy(scores, tags, reduction="sum")


def run_tagger(args, with_chars):
    n_words, n_chars, n_tags, sentences = benchdata.tagger_data(args.data, args.seed, with_chars)
    model = Tagger(n_words, n_chars, n_tags, with_chars).to(DEVICE)
    optimizers = make_optimizers(model)

    def step(k):
        words, chars, tags = sentences[k % len(sentences)]
        spellings = [on_device(c) if c is not None else None for c in chars]
        loss = train_step(optimizers, model(on_device(words), spellings, on_device(tags)))
        return loss, len(words), len(words)

    return step


class TreeLSTM(nn.Module):
    def __init__(self, vocab, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, 128, sparse=True)
        self.leaf = nn.Linear(128, 3 * hidden)
        self.left = nn.Linear(hidden, 5 * hidden)
        self.right = nn.Linear(hidden, 5 * hidden, bias=False)
        self.out = nn.Linear(hidden, 5)

    def forward(self, nodes, leaf_words, label):
        embedded = self.embed(leaf_words)
        hs, cs = [], []
        leaf = 0
        for left, right, _ in nodes:
            if left < 0:
                i, o, u = self.leaf(embedded[leaf]).chunk(3)
                leaf += 1
                c = torch.sigmoid(i) * torch.tanh(u)
            else:
                i, fl, fr, o, u = (self.left(hs[left]) + self.right(hs[right])).chunk(5)
                c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cs[left] + torch.sigmoid(fr) * cs[right]
            hs.append(torch.sigmoid(o) * torch.tanh(c))
            cs.append(c)
        return -F.log_softmax(self.out(hs[-1]), dim=0)[label]


def run_treelstm(args):
    vocab, examples = benchdata.treelstm_data(args.data, args.seed)
    model = TreeLSTM(vocab).to(DEVICE)
    optimizers = make_optimizers(model)

    def step(k):
        nodes, label = examples[k % len(examples)]
        leaf_words = on_device([w for left, _, w in nodes if left < 0])
        return train_step(optimizers, model(nodes, leaf_words, label)), 1, 1

    return step


class Parser(nn.Module):
    def __init__(self, words, tags, actions):
        super().__init__()
        self.word_embed = nn.Embedding(words, 100, sparse=True)
        self.tag_embed = nn.Embedding(tags, 25, sparse=True)
        self.lstm = nn.LSTM(125, 125, bidirectional=True)
        self.empty = nn.Parameter(torch.empty(250).uniform_(-0.1, 0.1))
        self.hidden = nn.Linear(4 * 250, 100)
        self.out = nn.Linear(100, actions)

    def forward(self, words, tags, transitions):
        x = torch.cat([self.word_embed(words), self.tag_embed(tags)], 1)
        vectors, _ = self.lstm(x.unsqueeze(1))
        vectors = vectors.squeeze(1)
        losses = []
        for positions, action in transitions:
            features = torch.cat([vectors[p] if p >= 0 else self.empty for p in positions])
            scores = self.out(torch.tanh(self.hidden(features)))
            losses.append(-F.log_softmax(scores, dim=0)[action])
        return torch.stack(losses).sum()


def run_parser(args):
    n_words, n_tags, n_actions, examples = benchdata.parser_data(args.data, args.seed)
    model = Parser(n_words, n_tags, n_actions).to(DEVICE)
    optimizers = make_optimizers(model)

    def step(k):
        words, tags, transitions = examples[k % len(examples)]
        loss = train_step(optimizers, model(on_device(words), on_device(tags), transitions))
        return loss, len(transitions), 1

    return step


def main():
    global DEVICE
    args = benchdata.parse_args("PyTorch benchmark tasks",
                                lambda p: p.add_argument("--device", default="cpu", choices=("cpu", "cuda")))
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_tasks.py: --device cuda, but this PyTorch sees no CUDA device (torch %s, built for "
                         "CUDA %s)" % (torch.__version__, torch.version.cuda or "none: a CPU-only wheel"))
    DEVICE = torch.device(args.device)
    if args.task == "bilstm" or args.update_batch != 1 or args.autobatch or args.manual:
        raise SystemExit("torch_tasks.py: only the one-example-per-graph settings of the dynet-benchmark tasks "
                         "(no bilstm, --update-batch, --autobatch or --manual)")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.task == "rnnlm":
        step = run_rnnlm(args)
    elif args.task in ("tagger", "tagger_char"):
        step = run_tagger(args, args.task == "tagger_char")
    elif args.task == "treelstm":
        step = run_treelstm(args)
    else:
        step = run_parser(args)
    benchdata.train_and_time(args, "torch", step)


if __name__ == "__main__":
    main()
