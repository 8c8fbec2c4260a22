"""The benchmark tasks through DyNet's Python API, written as DyNet users write them.

Runs on the original DyNet (`pip install dyNET38`, module `dynet`) and, once our Python package
exists, on ours with `--module NAME`. Same architectures, sizes, data and example order as the C++
programs in bench/tasks: expressions per word / node / transition, --update-batch examples per graph
(default one; rnnlm: an example is one minibatch, with batched lookups and losses), --autobatch N as DyNet's
--dynet-autobatch, --manual 1 for the hand-batched version (bilstm), AdamTrainer with DyNet's default
sparse updates of lookup parameters and gradient clipping off.

    python dynet_tasks.py TASK --data DIR [--steps N] [--warmup N] [--minibatch N] [--update-batch N]
                          [--autobatch N] [--manual 1] [--module dynet]
"""

import importlib
import sys

import benchdata


def add_module_arg(parser):
    parser.add_argument("--module", default="dynet", help="the DyNet-compatible module to import")
    parser.add_argument("--impl", default="dynet-py", help="the implementation name in the result line")


# The original DyNet cannot grow its memory pools under autobatching ("Dynet does not support both
# dynamic increasing of memory pool size, and automatic batching"): it needs a fixed --dynet-mem large
# enough for the biggest graph (MB, split over its pools; only the pages it touches count in RSS).
DYNET_AUTOBATCH_MEM_MB = 2048


def load_dynet(module, seed, autobatch):
    if module == "dynet":
        import dynet_config  # must come before the first import of dynet
        if autobatch:
            dynet_config.set(random_seed=seed, autobatch=autobatch, mem=DYNET_AUTOBATCH_MEM_MB)
        else:
            dynet_config.set(random_seed=seed)
    elif autobatch:
        sys.argv += ["--dynet-autobatch", str(autobatch)]  # DyNet's other way to set it, read at import
    return importlib.import_module(module)


def make_trainer(dy, pc):
    trainer = dy.AdamTrainer(pc)
    trainer.set_clip_threshold(0)  # <= 0 turns clipping off: PyTorch's optimisers do not clip
    return trainer


def make_step(dy, args, pc, examples, loss_of, outcome_of):
    """step(k): one graph over the B = args.update_batch examples from examples[k * B] (wrapping around), the
    sum of loss_of(group) (the hand-batched loss of the group) or of loss_of(example) per example, then
    forward, backward and an Adam update. outcome_of(example) = (loss terms, units)."""
    trainer = make_trainer(dy, pc)
    grouped = args.manual

    def step(k):
        group = [examples[(k * args.update_batch + b) % len(examples)] for b in range(args.update_batch)]
        dy.renew_cg()
        if grouped:
            total = loss_of(group)
        else:
            losses = [loss_of(ex) for ex in group]
            total = losses[0] if len(losses) == 1 else dy.esum(losses)
        value = total.value()
        total.backward()
        trainer.update()
        outcomes = [outcome_of(ex) for ex in group]
        return value, sum(o[0] for o in outcomes), sum(o[1] for o in outcomes)

    step.model = pc  # DyNet frees the parameters with the Python collection object
    return step


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

    def loss_of(batch):
        longest = max(len(s) for s in batch)
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
        return dy.sum_batches(dy.esum(losses))

    def outcome_of(batch):
        words = sum(len(s) + 1 for s in batch)
        return words, words

    return make_step(dy, args, pc, batches, loss_of, outcome_of)


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

    def spell(chars):
        embedded = [dy.lookup(char_embed, c) for c in chars]
        f = char_forward.initial_state()
        for x in embedded:
            f = f.add_input(x)
        r = char_backward.initial_state()
        for x in reversed(embedded):
            r = r.add_input(x)
        return dy.concatenate([f.output(), r.output()])

    def loss_of(sentence):
        words, chars, tags = sentence
        inputs = [spell(c) if c is not None else dy.lookup(word_embed, w) for w, c in zip(words, chars)]
        forward_out, backward_out = bidirectional(forward_lstm, backward_lstm, inputs)
        w1, b1 = dy.parameter(hidden_w), dy.parameter(hidden_b)
        w2, b2 = dy.parameter(output_w), dy.parameter(output_b)
        losses = []
        for fo, bo, tag in zip(forward_out, backward_out, tags):
            h = dy.tanh(dy.affine_transform([b1, w1, dy.concatenate([fo, bo])]))
            losses.append(dy.pickneglogsoftmax(dy.affine_transform([b2, w2, h]), tag))
        return dy.esum(losses)

    return make_step(dy, args, pc, sentences, loss_of, lambda s: (len(s[0]), len(s[0])))


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

    def loss_of(example):
        nodes, label = example
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
        return dy.pickneglogsoftmax(scores, label)

    return make_step(dy, args, pc, examples, loss_of, lambda ex: (1, 1))


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

    def loss_of(example):
        words, tags, transitions = example
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
        return dy.esum(losses)

    return make_step(dy, args, pc, examples, loss_of, lambda ex: (len(ex[2]), 1))


def run_bilstm(dy, args):
    length, n_tags = benchdata.BILSTM_LENGTH, benchdata.BILSTM_TAGS
    sequences = benchdata.bilstm_data(args.seed)
    pc = dy.ParameterCollection()
    embed = pc.add_lookup_parameters((benchdata.BILSTM_VOCAB, 128))
    forward_lstm = dy.VanillaLSTMBuilder(2, 128, 200, pc)
    backward_lstm = dy.VanillaLSTMBuilder(2, 128, 200, pc)
    output_w = pc.add_parameters((n_tags, 400))
    output_b = pc.add_parameters((n_tags,), init=dy.ConstInitializer(0.0))

    def tag_losses(inputs, pick):
        forward_out, backward_out = bidirectional(forward_lstm, backward_lstm, inputs)
        w, b = dy.parameter(output_w), dy.parameter(output_b)
        return dy.esum([pick(dy.affine_transform([b, w, dy.concatenate([fo, bo])]), t)
                        for t, (fo, bo) in enumerate(zip(forward_out, backward_out))])

    def sequence_loss(sequence):
        words, tags = sequence
        return tag_losses([dy.lookup(embed, w) for w in words], lambda s, t: dy.pickneglogsoftmax(s, tags[t]))

    def minibatch_loss(group):  # the hand-batched version: index vectors per position, sum_batches
        inputs = [dy.lookup_batch(embed, [words[t] for words, _ in group]) for t in range(length)]
        return dy.sum_batches(tag_losses(
            inputs, lambda s, t: dy.pickneglogsoftmax_batch(s, [tags[t] for _, tags in group])))

    return make_step(dy, args, pc, sequences, minibatch_loss if args.manual else sequence_loss,
                     lambda s: (length, length))


def main():
    args = benchdata.parse_args("DyNet-API benchmark tasks", extra=add_module_arg)
    sys.argv = sys.argv[:1]  # DyNet reads --dynet-* flags from sys.argv; ours are not for it
    if args.manual and args.task != "bilstm":
        raise SystemExit("dynet_tasks.py: %s has no hand-batched version (--manual 1)%s"
                         % (args.task, "; it is always hand-batched" if args.task == "rnnlm" else ""))
    dy = load_dynet(args.module, args.seed, args.autobatch)
    if args.task == "bilstm":
        step = run_bilstm(dy, args)
    elif args.task == "rnnlm":
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
