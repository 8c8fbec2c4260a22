"""The benchmark tasks through DyNet's Python API, written as DyNet users write them.

Runs on the original DyNet (`pip install dyNET38`, module `dynet`) and, once our Python package
exists, on ours with `--module NAME`. Same architectures, sizes, data and example order as the C++
programs in bench/tasks: expressions per word / node / transition, one graph per example (rnnlm: per
minibatch, with batched lookups and losses), AdamTrainer with DyNet's default sparse updates of
lookup parameters and gradient clipping off.

    python dynet_tasks.py TASK --data DIR [--steps N] [--warmup N] [--minibatch N] [--module dynet]
"""

import importlib
import sys

import benchdata


def add_module_arg(parser):
    parser.add_argument("--module", default="dynet", help="the DyNet-compatible module to import")
    parser.add_argument("--impl", default="dynet-py", help="the implementation name in the result line")


def load_dynet(module, seed):
    if module == "dynet":
        import dynet_config  # must come before the first import of dynet
        dynet_config.set(random_seed=seed)
    return importlib.import_module(module)


def make_trainer(dy, pc):
    trainer = dy.AdamTrainer(pc)
    trainer.set_clip_threshold(0)  # <= 0 turns clipping off: PyTorch's optimisers do not clip
    return trainer


def bidirectional(forward_lstm, backward_lstm, inputs):
    """The outputs of both LSTMs at every position (the backward one run from the end)."""
    f = forward_lstm.initial_state()
    forward_out = []
    for x in inputs:
        f = f.add_input(x)
        forward_out.append(f.output())
    r = backward_lstm.initial_state()
    backward_out = []
    for x in reversed(inputs):
        r = r.add_input(x)
        backward_out.append(r.output())
    backward_out.reverse()
    return forward_out, backward_out


def run_rnnlm(dy, args):
    vocab, batches = benchdata.rnnlm_data(args.data, args.minibatch, args.seed)
    pc = dy.ParameterCollection()
    embed = pc.add_lookup_parameters((vocab, 128))
    lstm = dy.VanillaLSTMBuilder(1, 128, 256, pc)
    softmax_w = pc.add_parameters((vocab, 256))
    softmax_b = pc.add_parameters((vocab,), init=dy.ConstInitializer(0.0))
    trainer = make_trainer(dy, pc)

    def step(k):
        batch = batches[k % len(batches)]
        size = len(batch)
        longest = max(len(s) for s in batch)
        dy.renew_cg()
        w, b = dy.parameter(softmax_w), dy.parameter(softmax_b)
        state = lstm.initial_state()
        losses = []
        for t in range(longest + 1):
            inputs = [0 if t == 0 else (s[t - 1] if t - 1 < len(s) else 0) for s in batch]
            targets = [s[t] if t < len(s) else 0 for s in batch]
            state = state.add_input(dy.lookup_batch(embed, inputs))
            loss = dy.pickneglogsoftmax_batch(dy.affine_transform([b, w, state.output()]), targets)
            if any(t > len(s) for s in batch):
                mask = dy.inputTensor([[1.0 if t <= len(s) else 0.0 for s in batch]], batched=True)
                loss = dy.cmult(loss, mask)
            losses.append(loss)
        total = dy.sum_batches(dy.esum(losses))
        value = total.value()
        total.backward()
        trainer.update()
        words = sum(len(s) + 1 for s in batch)
        return value, words, words

    step.model = pc  # DyNet frees the parameters with the Python collection object
    return step


def run_tagger(dy, args, with_chars):
    n_words, n_chars, n_tags, sentences = benchdata.tagger_data(args.data, args.seed, with_chars)
    pc = dy.ParameterCollection()
    word_embed = pc.add_lookup_parameters((n_words, 128))
    forward_lstm = dy.VanillaLSTMBuilder(1, 128, 50, pc)
    backward_lstm = dy.VanillaLSTMBuilder(1, 128, 50, pc)
    hidden_w = pc.add_parameters((32, 100))
    hidden_b = pc.add_parameters((32,), init=dy.ConstInitializer(0.0))
    output_w = pc.add_parameters((n_tags, 32))
    output_b = pc.add_parameters((n_tags,), init=dy.ConstInitializer(0.0))
    if with_chars:
        char_embed = pc.add_lookup_parameters((n_chars, 20))
        char_forward = dy.VanillaLSTMBuilder(1, 20, 64, pc)
        char_backward = dy.VanillaLSTMBuilder(1, 20, 64, pc)
    trainer = make_trainer(dy, pc)

    def spell(chars):
        embedded = [dy.lookup(char_embed, c) for c in chars]
        f = char_forward.initial_state()
        for x in embedded:
            f = f.add_input(x)
        r = char_backward.initial_state()
        for x in reversed(embedded):
            r = r.add_input(x)
        return dy.concatenate([f.output(), r.output()])

    def step(k):
        words, chars, tags = sentences[k % len(sentences)]
        dy.renew_cg()
        inputs = [spell(c) if c is not None else dy.lookup(word_embed, w) for w, c in zip(words, chars)]
        forward_out, backward_out = bidirectional(forward_lstm, backward_lstm, inputs)
        w1, b1 = dy.parameter(hidden_w), dy.parameter(hidden_b)
        w2, b2 = dy.parameter(output_w), dy.parameter(output_b)
        losses = []
        for fo, bo, tag in zip(forward_out, backward_out, tags):
            h = dy.tanh(dy.affine_transform([b1, w1, dy.concatenate([fo, bo])]))
            losses.append(dy.pickneglogsoftmax(dy.affine_transform([b2, w2, h]), tag))
        total = dy.esum(losses)
        value = total.value()
        total.backward()
        trainer.update()
        return value, len(words), len(words)

    step.model = pc  # DyNet frees the parameters with the Python collection object
    return step


def run_treelstm(dy, args):
    vocab, examples = benchdata.treelstm_data(args.data, args.seed)
    hid = 128
    pc = dy.ParameterCollection()
    embed = pc.add_lookup_parameters((vocab, 128))
    leaf_w = pc.add_parameters((3 * hid, 128))
    leaf_b = pc.add_parameters((3 * hid,), init=dy.ConstInitializer(0.0))
    left_u = pc.add_parameters((5 * hid, hid))
    right_u = pc.add_parameters((5 * hid, hid))
    node_b = pc.add_parameters((5 * hid,), init=dy.ConstInitializer(0.0))
    output_w = pc.add_parameters((5, hid))
    output_b = pc.add_parameters((5,), init=dy.ConstInitializer(0.0))
    trainer = make_trainer(dy, pc)

    def step(k):
        nodes, label = examples[k % len(examples)]
        dy.renew_cg()
        lw, lb = dy.parameter(leaf_w), dy.parameter(leaf_b)
        ul, ur, nb = dy.parameter(left_u), dy.parameter(right_u), dy.parameter(node_b)
        hs, cs = [], []
        for left, right, word in nodes:
            if left < 0:
                g = dy.affine_transform([lb, lw, dy.lookup(embed, word)])
                c = dy.cmult(dy.logistic(dy.pick_range(g, 0, hid)), dy.tanh(dy.pick_range(g, 2 * hid, 3 * hid)))
                h = dy.cmult(dy.logistic(dy.pick_range(g, hid, 2 * hid)), dy.tanh(c))
            else:
                g = dy.affine_transform([nb, ul, hs[left], ur, hs[right]])
                c = (dy.cmult(dy.logistic(dy.pick_range(g, 0, hid)), dy.tanh(dy.pick_range(g, 4 * hid, 5 * hid)))
                     + dy.cmult(dy.logistic(dy.pick_range(g, hid, 2 * hid)), cs[left])
                     + dy.cmult(dy.logistic(dy.pick_range(g, 2 * hid, 3 * hid)), cs[right]))
                h = dy.cmult(dy.logistic(dy.pick_range(g, 3 * hid, 4 * hid)), dy.tanh(c))
            hs.append(h)
            cs.append(c)
        scores = dy.affine_transform([dy.parameter(output_b), dy.parameter(output_w), hs[-1]])
        loss = dy.pickneglogsoftmax(scores, label)
        value = loss.value()
        loss.backward()
        trainer.update()
        return value, 1, 1

    step.model = pc  # DyNet frees the parameters with the Python collection object
    return step


def run_parser(dy, args):
    n_words, n_tags, n_actions, examples = benchdata.parser_data(args.data, args.seed)
    pc = dy.ParameterCollection()
    word_embed = pc.add_lookup_parameters((n_words, 100))
    tag_embed = pc.add_lookup_parameters((n_tags, 25))
    forward_lstm = dy.VanillaLSTMBuilder(1, 125, 125, pc)
    backward_lstm = dy.VanillaLSTMBuilder(1, 125, 125, pc)
    empty = pc.add_parameters((250,))
    hidden_w = pc.add_parameters((100, 1000))
    hidden_b = pc.add_parameters((100,), init=dy.ConstInitializer(0.0))
    output_w = pc.add_parameters((n_actions, 100))
    output_b = pc.add_parameters((n_actions,), init=dy.ConstInitializer(0.0))
    trainer = make_trainer(dy, pc)

    def step(k):
        words, tags, transitions = examples[k % len(examples)]
        dy.renew_cg()
        inputs = [dy.concatenate([dy.lookup(word_embed, w), dy.lookup(tag_embed, t)]) for w, t in zip(words, tags)]
        forward_out, backward_out = bidirectional(forward_lstm, backward_lstm, inputs)
        vectors = [dy.concatenate([fo, bo]) for fo, bo in zip(forward_out, backward_out)]
        absent = dy.parameter(empty)
        w1, b1 = dy.parameter(hidden_w), dy.parameter(hidden_b)
        w2, b2 = dy.parameter(output_w), dy.parameter(output_b)
        losses = []
        for positions, action in transitions:
            features = dy.concatenate([vectors[p] if p >= 0 else absent for p in positions])
            h = dy.tanh(dy.affine_transform([b1, w1, features]))
            losses.append(dy.pickneglogsoftmax(dy.affine_transform([b2, w2, h]), action))
        total = dy.esum(losses)
        value = total.value()
        total.backward()
        trainer.update()
        return value, len(transitions), 1

    step.model = pc  # DyNet frees the parameters with the Python collection object
    return step


def main():
    args = benchdata.parse_args("DyNet-API benchmark tasks", extra=add_module_arg)
    sys.argv = sys.argv[:1]  # DyNet reads --dynet-* flags from sys.argv; ours are not for it
    dy = load_dynet(args.module, args.seed)
    if args.task == "rnnlm":
        step = run_rnnlm(dy, args)
    elif args.task in ("tagger", "tagger_char"):
        step = run_tagger(dy, args, args.task == "tagger_char")
    elif args.task == "treelstm":
        step = run_treelstm(dy, args)
    else:
        step = run_parser(dy, args)
    benchdata.train_and_time(args, args.impl, step)


if __name__ == "__main__":
    main()
