"""XOR with a two-layer perceptron, as in DyNet's Python tutorial."""
from common import parser, plot, progress  # before dynet: it passes --seed on as --dynet-seed
import dynet as dy


args = parser(__doc__).parse_args()
pc = dy.ParameterCollection()
W = pc.add_parameters((8, 2))
V = pc.add_parameters((1, 8))
b = pc.add_parameters((8,))
trainer = dy.SimpleSGDTrainer(pc, learning_rate=0.2)

x = dy.vecInput(2)
y = dy.scalarInput(0)
output = dy.logistic(V * dy.tanh(W * x + b))
loss = dy.binary_log_loss(output, y)

data = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)] * 50
history = []
for epoch in range(max(args.epochs, 20)):
    total = 0.0
    bar = progress(data, "epoch %d" % (epoch + 1))
    for inputs, label in bar:
        x.set(inputs)
        y.set(label)
        total += loss.value()
        loss.backward()
        trainer.update()
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss="%.4f" % (total / len(data)), refresh=False)
    history.append(total / len(data))
    print("epoch %d: loss %.4f" % (epoch + 1, history[-1]))

for inputs, label in data[:4]:
    x.set(inputs)
    print("%s -> %.3f (target %d)" % (inputs, output.value(), label))
plot(args.plot, {"train": history})
