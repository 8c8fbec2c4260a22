// treelstm: a binary Tree-LSTM sentiment classifier (Tai et al. 2015; embedding 128, hidden 128,
// softmax over the 5 classes at the root), one tree per graph, trained with Adam. Metric: sentences/s.
//   build/bench/bench_treelstm --data DIR [--steps N] [--warmup N] [--threads N]
//
// Leaf:     [i; o; u] = W x + b,                   c = σ(i) ⊙ tanh(u)
// Internal: [i; f_l; f_r; o; u] = U_l h_l + U_r h_r + b,
//           c = σ(i) ⊙ tanh(u) + σ(f_l) ⊙ c_l + σ(f_r) ⊙ c_r
// Both:     h = σ(o) ⊙ tanh(c)

#include "common.h"
#include "dynet/expr.h"

using namespace dynet;

namespace {

constexpr unsigned kEmbed = 128, kHidden = 128, kClasses = 5;

struct TreeNode {
  int left = -1, right = -1;
  unsigned word = 0;
};
struct Example {
  std::vector<TreeNode> nodes;  // post-order; the root is last
  unsigned label = 0;
};

struct TreeLstm {
  LookupParameter embed;
  Parameter leaf_w, leaf_b, left_u, right_u, node_b, output_w, output_b;

  TreeLstm(ParameterCollection& pc, unsigned vocab)
      : embed(pc.add_lookup_parameters(vocab, {kEmbed})),
        leaf_w(pc.add_parameters({3 * kHidden, kEmbed})),
        leaf_b(pc.add_parameters({3 * kHidden}, ParameterInitConst(0.f))),
        left_u(pc.add_parameters({5 * kHidden, kHidden})),
        right_u(pc.add_parameters({5 * kHidden, kHidden})),
        node_b(pc.add_parameters({5 * kHidden}, ParameterInitConst(0.f))),
        output_w(pc.add_parameters({kClasses, kHidden})),
        output_b(pc.add_parameters({kClasses}, ParameterInitConst(0.f))) {}

  Expression tree_loss(ComputationGraph& cg, const Example& ex) {
    Expression lw = parameter(cg, leaf_w), lb = parameter(cg, leaf_b);
    Expression ul = parameter(cg, left_u), ur = parameter(cg, right_u), nb = parameter(cg, node_b);
    const unsigned h = kHidden;
    std::vector<Expression> hs(ex.nodes.size()), cs(ex.nodes.size());
    for (size_t k = 0; k < ex.nodes.size(); ++k) {
      const TreeNode& n = ex.nodes[k];
      if (n.left < 0) {
        Expression g = affine_transform({lb, lw, lookup(cg, embed, n.word)});
        cs[k] = cmult(logistic(pick_range(g, 0, h)), tanh(pick_range(g, 2 * h, 3 * h)));
        hs[k] = cmult(logistic(pick_range(g, h, 2 * h)), tanh(cs[k]));
      } else {
        Expression g = affine_transform({nb, ul, hs[n.left], ur, hs[n.right]});
        cs[k] = cmult(logistic(pick_range(g, 0, h)), tanh(pick_range(g, 4 * h, 5 * h))) +
                cmult(logistic(pick_range(g, h, 2 * h)), cs[n.left]) +
                cmult(logistic(pick_range(g, 2 * h, 3 * h)), cs[n.right]);
        hs[k] = cmult(logistic(pick_range(g, 3 * h, 4 * h)), tanh(cs[k]));
      }
    }
    Expression scores = affine_transform({parameter(cg, output_b), parameter(cg, output_w), hs.back()});
    return pickneglogsoftmax(scores, ex.label);
  }
};

}  // namespace

int main(int argc, char** argv) {
  return bench::task_main("bench_treelstm", argc, argv, [](const bench::Options& options) {
    bench::reject_manual(options, "bench_treelstm");
    bench::Vocab vocab;
    std::vector<Example> examples;
    for (const bench::Tree& tree : bench::read_trees(options.data_dir + "/sst/train.txt")) {
      Example ex;
      for (const bench::TreeNode& t : tree) {
        TreeNode n;
        n.left = t.left;
        n.right = t.right;
        if (t.is_leaf()) n.word = vocab.add(t.word);
        ex.nodes.push_back(n);
      }
      ex.label = static_cast<unsigned>(tree.back().label);
      if (ex.label >= kClasses) throw std::runtime_error("a root label is not in 0..4");
      examples.push_back(std::move(ex));
    }
    if (examples.empty()) throw std::runtime_error("no trees in the training data");
    bench::deterministic_shuffle(examples, options.seed);

    ParameterCollection pc;
    TreeLstm model(pc, vocab.size());
    bench::Result result = bench::train_with_adam(
        options, pc, examples, [&](ComputationGraph& cg, const Example& ex) { return model.tree_loss(cg, ex); },
        [](const Example&) { return bench::StepOutcome{.loss_terms = 1, .units = 1}; });
    result.task = "treelstm";
    result.unit = "sentences/s";
    result.loss_unit = "nll per sentence";
    return result;
  });
}
