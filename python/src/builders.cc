// Trainers and builders: RNN builders (their states are Python objects, dynet/__init__.py) and the
// softmax builders.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>

#include "dynet/cfsm-builder.h"
#include "dynet/fast-lstm.h"
#include "dynet/gru.h"
#include "dynet/lstm.h"
#include "dynet/rnn.h"
#include "dynet/training.h"
#include "ext.h"

namespace dynet::py {
using namespace nb::literals;

namespace {
// f applied to the builder as the class that holds its per-layer parameter lists.
template <class F>
auto with_layers(RNNBuilder& b, F&& f) {
  if (auto* l = dynamic_cast<LSTMStateBuilder*>(&b)) return f(*l);
  if (auto* s = dynamic_cast<SimpleRNNBuilder*>(&b)) return f(*s);
  if (auto* g = dynamic_cast<GRUBuilder*>(&b)) return f(*g);
  throw std::invalid_argument("get_parameters: this builder has no per-layer parameter lists");
}

// The word ids of DyNet's Python `dic` ({word: id}, ids 0..n-1) as a frozen Dict with the same ids.
Dict dict_of(nb::dict dic) {
  std::vector<std::string> words(nb::len(dic));
  std::vector<bool> seen(words.size());
  for (auto [k, v] : dic) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::int_>(v))
      throw nb::type_error("ClassFactoredSoftmaxBuilder: dic must map words (str) to ids (int)");
    const long long id = int_in_range(v, LLONG_MIN, LLONG_MAX, "ClassFactoredSoftmaxBuilder");
    if (id < 0 || id >= static_cast<long long>(words.size()) || seen[static_cast<size_t>(id)])
      throw std::invalid_argument("ClassFactoredSoftmaxBuilder: the ids of dic must be 0.." +
                                  std::to_string(words.size() - 1) + ", each once (got " + std::to_string(id) + ")");
    seen[static_cast<size_t>(id)] = true;
    words[static_cast<size_t>(id)] = nb::cast<std::string>(k);
  }
  Dict d;
  for (const std::string& w : words) d.convert(w);
  d.freeze();
  return d;
}
}  // namespace

void init_builders(nb::module_& m) {
  // ---- trainers ----
  nb::class_<Trainer>(m, "Trainer")
      .def("update", [](Trainer& t) { t.update(); })
      .def("update_subset", [](Trainer& t, std::vector<unsigned> p, std::vector<unsigned> l) { t.update(p, l); },
           "updated_params"_a, "updated_lookups"_a)
      .def("update_epoch", [](Trainer& t, float r) { t.update_epoch(r); }, "r"_a = 1.f)
      .def("restart", [](Trainer& t, std::optional<float> lr) { if (lr) t.restart(*lr); else t.restart(); },
           "learning_rate"_a = nb::none())
      .def("status", [](Trainer& t) { trainer_status(t); })
      .def("set_sparse_updates", [](Trainer& t, truthy b) { t.sparse_updates_enabled = b; }, "su"_a)
      .def("set_clip_threshold", [](Trainer& t, float thr) {
        if (thr <= 0) { t.clipping_enabled = false; t.clip_threshold = 0; }
        else { t.clipping_enabled = true; t.clip_threshold = thr; }
      }, "thr"_a)
      .def("get_clip_threshold", [](Trainer& t) { return t.clip_threshold; })
      .def_prop_rw("learning_rate", [](Trainer& t) { return t.learning_rate; }, [](Trainer& t, float v) { t.learning_rate = v; })
      .def("set_learning_rate", [](Trainer& t, float v) { t.learning_rate = v; }, "value"_a)
      .def("whoami", [](nb::handle self) { return nb::str(nb::getattr(self.type(), "__name__")); });
  nb::class_<SimpleSGDTrainer, Trainer>(m, "SimpleSGDTrainer")
      .def(nb::init<ParameterCollection&, float>(), "m"_a, "learning_rate"_a = 0.1f, nb::keep_alive<1, 2>());
  nb::class_<CyclicalSGDTrainer, Trainer>(m, "CyclicalSGDTrainer")
      .def(nb::init<ParameterCollection&, float, float, float, float, float>(), "m"_a, "learning_rate_min"_a = 0.01f,
           "learning_rate_max"_a = 0.1f, "step_size"_a = 2000.f, "gamma"_a = 1.f, "edecay"_a = 0.f, nb::keep_alive<1, 2>());
  nb::class_<MomentumSGDTrainer, Trainer>(m, "MomentumSGDTrainer")
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "learning_rate"_a = 0.01f, "mom"_a = 0.9f, nb::keep_alive<1, 2>());
  nb::class_<AdagradTrainer, Trainer>(m, "AdagradTrainer")
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "learning_rate"_a = 0.1f, "eps"_a = 1e-20f, nb::keep_alive<1, 2>());
  nb::class_<AdadeltaTrainer, Trainer>(m, "AdadeltaTrainer")
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "eps"_a = 1e-6f, "rho"_a = 0.95f, nb::keep_alive<1, 2>());
  // Python's RMSProp defaults differ from C++'s (DyNet's Python module used lr 0.001, eps 1e-8, rho 0.9).
  nb::class_<RMSPropTrainer, Trainer>(m, "RMSPropTrainer")
      .def(nb::init<ParameterCollection&, float, float, float>(), "m"_a, "learning_rate"_a = 0.001f, "eps"_a = 1e-8f,
           "rho"_a = 0.9f, nb::keep_alive<1, 2>());
  nb::class_<AdamTrainer, Trainer>(m, "AdamTrainer")
      .def(nb::init<ParameterCollection&, float, float, float, float>(), "m"_a, "alpha"_a = 0.001f, "beta_1"_a = 0.9f,
           "beta_2"_a = 0.999f, "eps"_a = 1e-8f, nb::keep_alive<1, 2>());
  nb::class_<AmsgradTrainer, Trainer>(m, "AmsgradTrainer")
      .def(nb::init<ParameterCollection&, float, float, float, float>(), "m"_a, "alpha"_a = 0.001f, "beta_1"_a = 0.9f,
           "beta_2"_a = 0.999f, "eps"_a = 1e-8f, nb::keep_alive<1, 2>());

  // ---- RNN builders (state objects are Python: dynet/__init__.py) ----
  nb::class_<RNNBuilder>(m, "_RNNBuilder")
      .def("_new_graph", [](RNNBuilder& b, truthy update) { b.new_graph(current_graph(), update); })
      .def("_start", [](RNNBuilder& b, std::vector<Expression> h0) { b.start_new_sequence(h0); return b.state(); })
      .def("_add_input", [](RNNBuilder& b, int prev, const Expression& x) {
        Expression y = b.add_input(RNNPointer(prev), x);
        return std::make_pair(static_cast<int>(b.state()), y);
      })
      .def("_set_h", [](RNNBuilder& b, int prev, std::vector<Expression> h) { Expression y = b.set_h(RNNPointer(prev), h); return std::make_pair(static_cast<int>(b.state()), y); })
      .def("_set_s", [](RNNBuilder& b, int prev, std::vector<Expression> s) { Expression y = b.set_s(RNNPointer(prev), s); return std::make_pair(static_cast<int>(b.state()), y); })
      .def("_get_h", [](RNNBuilder& b, int i) { return b.get_h(RNNPointer(i)); })
      .def("_get_s", [](RNNBuilder& b, int i) { return b.get_s(RNNPointer(i)); })
      .def("_head", [](RNNBuilder& b, int i) { return static_cast<int>(b.get_head(RNNPointer(i))); })
      .def("param_collection", [](RNNBuilder& b) { return b.get_parameter_collection(); })
      .def("set_dropout", [](RNNBuilder& b, float p) { b.set_dropout(p); }, "f"_a)
      .def("disable_dropout", [](RNNBuilder& b) { b.disable_dropout(); })
      .def("get_parameters", [](RNNBuilder& b) {
        return with_layers(b, [](auto& x) {
          std::vector<std::vector<PyParameters>> out;
          for (auto& layer : x.get_parameters()) {
            out.emplace_back();
            for (auto& p : layer) out.back().push_back({p, {}});
          }
          return out;
        });
      })
      .def("get_parameter_expressions", [](nb::pointer_and_handle<RNNBuilder> self) {
        auto layers = with_layers(*self.p, [](auto& x) { return x.get_parameter_expressions(); });
        // Before initial_state in the current graph the builder's expressions are missing or stale: DyNet
        // raises ValueError then, and programs test for it.
        bool stale = layers.empty();
        for (auto& layer : layers)
          for (auto& e : layer) stale = stale || e.is_stale();
        if (stale)
          throw nb::value_error(("Attempt to use a stale expression, renew CG and/or call initial_state before "
                                 "accessing " + nb::cast<std::string>(nb::getattr(self.h.type(), "__name__")) +
                                 " internal parameters expression").c_str());
        return layers;
      });
  nb::class_<SimpleRNNBuilder, RNNBuilder>(m, "SimpleRNNBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, truthy>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "support_lags"_a = false, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](SimpleRNNBuilder& b, float d, float dh) { b.set_dropout(d, dh); }, "d"_a, "d_h"_a)
      .def("set_dropout_masks", [](SimpleRNNBuilder& b, unsigned bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1);
  nb::class_<VanillaLSTMBuilder, RNNBuilder>(m, "VanillaLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, truthy, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.f, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](VanillaLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a)
      .def("set_dropout_masks", [](VanillaLSTMBuilder& b, unsigned bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1);
  nb::class_<CoupledLSTMBuilder, RNNBuilder>(m, "CoupledLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());
  nb::class_<CompactVanillaLSTMBuilder, RNNBuilder>(m, "CompactVanillaLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](CompactVanillaLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a)
      .def("set_dropout_masks", [](CompactVanillaLSTMBuilder& b, unsigned bs) { b.set_dropout_masks(bs); },
           "batch_size"_a = 1)
      .def("set_weightnoise", [](CompactVanillaLSTMBuilder& b, float std) { b.set_weightnoise(std); }, "std"_a);
  nb::class_<SparseLSTMBuilder, RNNBuilder>(m, "SparseLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, truthy, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.f, nb::keep_alive<1, 5>())
      .def("set_sparsity", [](SparseLSTMBuilder& b, float s) { b.set_sparsity(s); }, "sparsity"_a)
      .def("set_dropouts", [](SparseLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a)
      .def("set_dropout_masks", [](SparseLSTMBuilder& b, unsigned bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1);
  nb::class_<FastLSTMBuilder, RNNBuilder>(m, "FastLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());

  // ---- softmax builders (the graph's parameters are added on each call, as DyNet's Python does) ----
  nb::class_<SoftmaxBuilder>(m, "SoftmaxBuilder")
      .def("neg_log_softmax", [](SoftmaxBuilder& b, const Expression& x, unsigned c, truthy update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true)
      .def("neg_log_softmax_batch", [](SoftmaxBuilder& b, const Expression& x, std::vector<unsigned> c, truthy update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true)
      .def("sample", [](SoftmaxBuilder& b, const Expression& x) {
        b.new_graph(current_graph(), true);
        return b.sample(x);
      }, "x"_a)
      .def("full_log_distribution", [](SoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.full_log_distribution(x);
      }, "x"_a, "update"_a = true)
      .def("full_logits", [](SoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.full_logits(x);
      }, "x"_a, "update"_a = true)
      .def("param_collection", [](SoftmaxBuilder& b) { return b.get_parameter_collection(); });
  nb::class_<StandardSoftmaxBuilder, SoftmaxBuilder>(m, "StandardSoftmaxBuilder")
      .def(nb::init<unsigned, unsigned, ParameterCollection&, truthy>(), "input_dim"_a, "num_classes"_a, "pc"_a,
           "bias"_a = true, nb::keep_alive<1, 4>());
  nb::class_<ClassFactoredSoftmaxBuilder, SoftmaxBuilder>(m, "ClassFactoredSoftmaxBuilder")
      .def("__init__", [](ClassFactoredSoftmaxBuilder* self, unsigned input_dim, const std::string& cluster_file,
                          nb::dict dic, ParameterCollection& pc, truthy bias) {
        Dict d = dict_of(dic);
        new (self) ClassFactoredSoftmaxBuilder(input_dim, cluster_file, d, pc, bias);
      }, "input_dim"_a, "cluster_file"_a, "dic"_a, "pc"_a, "bias"_a = true, nb::keep_alive<1, 5>())
      .def("class_log_distribution", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.class_log_distribution(x);
      }, "x"_a, "update"_a = true)
      .def("class_logits", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.class_logits(x);
      }, "x"_a, "update"_a = true)
      .def("subclass_log_distribution", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, unsigned classid, truthy update) {
        b.new_graph(current_graph(), update);
        return b.subclass_log_distribution(x, classid);
      }, "x"_a, "classid"_a, "update"_a = true)
      .def("subclass_logits", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, unsigned classid, truthy update) {
        b.new_graph(current_graph(), update);
        return b.subclass_logits(x, classid);
      }, "x"_a, "classid"_a, "update"_a = true);
  nb::class_<GRUBuilder, RNNBuilder>(m, "GRUBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());

}

}  // namespace dynet::py
