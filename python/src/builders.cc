// Trainers and builders: RNN builders (their states are Python objects, dynet/__init__.py) and the
// softmax builders.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <charconv>
#include <climits>
#include <memory>
#include <thread>
#include <unordered_map>

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

// The update rule of each trainer in one line (its docstring and repr): θ the parameters, g their gradient
// (clipped, see set_clip_threshold), η the learning rate.
const char* trainer_rule(const std::string& cls) {
  static const std::unordered_map<std::string, const char*> rules = {
      {"SimpleSGDTrainer", "θ ← θ - η g"},
      {"CyclicalSGDTrainer", "θ ← θ - η_t g, η_t going from η_min to η_max and back every 2·step_size updates (its range × γ^t)"},
      {"MomentumSGDTrainer", "v ← μ v - η g; θ ← θ + v"},
      {"AdagradTrainer", "G ← G + g²; θ ← θ - η g / √(G + ε)"},
      {"AdadeltaTrainer", "E[g²] ← ρ E[g²] + (1-ρ) g²; Δ ← -g √(E[Δ²] + ε) / √(E[g²] + ε); E[Δ²] ← ρ E[Δ²] + (1-ρ) Δ²; θ ← θ + Δ"},
      {"RMSPropTrainer", "r ← ρ r + (1-ρ) g²; θ ← θ - η g / √(r + ε)"},
      {"AdamTrainer", "m ← β₁ m + (1-β₁) g; v ← β₂ v + (1-β₂) g²; θ ← θ - η m̂ / (√v̂ + ε) (m̂, v̂ bias-corrected)"},
      {"AmsgradTrainer", "m ← β₁ m + (1-β₁) g; v ← β₂ v + (1-β₂) g²; v̂ ← max(v̂, v); θ ← θ - η m̂ / (√v̂ + ε)"}};
  auto it = rules.find(cls);
  return it == rules.end() ? "" : it->second;
}

// The shortest decimal that reads back as the same float32 (0.001, not 0.0010000000474974513).
std::string short_float(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void init_builders(nb::module_& m) {
  // ---- trainers ----
  nb::class_<Trainer>(m, "Trainer",
                      "The base of the trainers: update() changes the parameters of a ParameterCollection from their "
                      "gradients.\n\n"
                      "Each subclass's docstring gives its update rule (θ: a parameter, g: its gradient after "
                      "clipping, η: the learning rate).")
      .def("update", [](Trainer& t) { t.update(); }, nb::call_guard<nb::gil_scoped_release>(),
           "Updates every parameter of the collection from its gradient, then clears the gradients.\n\n"
           "Returns:\n    None")
      .def("update_subset", [](Trainer& t, const int_list<unsigned>& p, const int_list<unsigned>& l) { t.update(p, l); },
           "updated_params"_a, "updated_lookups"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Updates only some parameters (by their index in the collection).\n\n"
           "Args:\n"
           "    updated_params (list[int]): Indices of the Parameters to update.\n"
           "    updated_lookups (list[int]): Indices of the LookupParameters to update.\n\n"
           "Returns:\n    None")
      .def("update_epoch", [](Trainer& t, float r) { t.update_epoch(r); }, "r"_a = 1.0,
           "Counts epochs (DyNet's learning-rate decay hook; the rate itself is set with learning_rate).\n\n"
           "Args:\n    r (float): How many epochs passed. Defaults to 1.0.\n\n"
           "Returns:\n    None")
      .def("restart", [](Trainer& t, std::optional<float> lr) { if (lr) t.restart(*lr); else t.restart(); },
           "learning_rate"_a = nb::none(),
           "Clears the trainer's state (moments, accumulated squares), as for a fresh start.\n\n"
           "Args:\n    learning_rate (float | None): A new learning rate; None keeps the current one. Defaults to None.\n\n"
           "Returns:\n    None")
      .def("status", [](Trainer& t) { trainer_status(t); },
           "Prints the trainer's counters (updates, clips) on sys.stderr.\n\n"
           "Returns:\n    None")
      .def("set_sparse_updates", [](Trainer& t, truthy b) { t.sparse_updates_enabled = b; }, "su"_a,
           "Whether lookup tables update only the rows used since the last update.\n\n"
           "Args:\n    su (bool): True: sparse updates (the default); False: every row.\n\n"
           "Returns:\n    None")
      .def("set_clip_threshold", [](Trainer& t, float thr) {
        if (thr <= 0) { t.clipping_enabled = false; t.clip_threshold = 0; }
        else { t.clipping_enabled = true; t.clip_threshold = thr; }
      }, "thr"_a,
           "Sets gradient clipping: gradients are scaled down when their global L2 norm exceeds thr.\n\n"
           "Args:\n    thr (float): The threshold; 0 or less turns clipping off.\n\n"
           "Returns:\n    None")
      .def("get_clip_threshold", [](Trainer& t) { return t.clip_threshold; },
           "The gradient clipping threshold.\n\n"
           "Returns:\n    float: the threshold (0 when clipping is off).")
      .def_prop_rw("learning_rate", [](Trainer& t) { return t.learning_rate; }, [](Trainer& t, float v) { t.learning_rate = v; },
                   "The learning rate η (readable and writable).")
      .def("set_learning_rate", [](Trainer& t, float v) { t.learning_rate = v; }, "value"_a,
           "Sets the learning rate.\n\n"
           "Args:\n    value (float): The new learning rate η.\n\n"
           "Returns:\n    None")
      .def("whoami", [](nb::handle self) { return nb::str(nb::getattr(self.type(), "__name__")); },
           "The trainer's class name.\n\n"
           "Returns:\n    str: e.g. 'AdamTrainer'.")
      .def("__repr__", [](nb::handle self) {
        const std::string cls = nb::cast<std::string>(nb::getattr(self.type(), "__name__"));
        return "<" + cls + " learning_rate=" + short_float(nb::inst_ptr<Trainer>(self)->learning_rate) + ": " +
               trainer_rule(cls) + ">";
      });
  auto trainer_doc = [](const char* cls, const char* summary, const char* args) {
    static std::vector<std::unique_ptr<std::string>> keep;  // nanobind keeps the pointer
    keep.push_back(std::make_unique<std::string>(std::string(summary) + "\n\nUpdate rule: " + trainer_rule(cls) +
                                                 "\n\nArgs:\n    m (ParameterCollection): The parameters to train.\n" + args));
    return keep.back()->c_str();
  };
  nb::class_<SimpleSGDTrainer, Trainer>(m, "SimpleSGDTrainer",
      trainer_doc("SimpleSGDTrainer", "Stochastic gradient descent.",
                  "    learning_rate (float): η. Defaults to 0.1."))
      .def(nb::init<ParameterCollection&, float>(), "m"_a, "learning_rate"_a = 0.1, nb::keep_alive<1, 2>());
  nb::class_<CyclicalSGDTrainer, Trainer>(m, "CyclicalSGDTrainer",
      trainer_doc("CyclicalSGDTrainer", "SGD with a cyclical (triangular) learning rate.",
                  "    learning_rate_min (float): η_min. Defaults to 0.01.\n"
                  "    learning_rate_max (float): η_max. Defaults to 0.1.\n"
                  "    step_size (float): Updates per half cycle. Defaults to 2000.0.\n"
                  "    gamma (float): γ, the decay of the cycle's range per update. Defaults to 1.0.\n"
                  "    edecay (float): The learning-rate decay per epoch. Defaults to 0.0."))
      .def(nb::init<ParameterCollection&, float, float, float, float, float>(), "m"_a, "learning_rate_min"_a = 0.01,
           "learning_rate_max"_a = 0.1, "step_size"_a = 2000.0, "gamma"_a = 1.0, "edecay"_a = 0.0, nb::keep_alive<1, 2>());
  nb::class_<MomentumSGDTrainer, Trainer>(m, "MomentumSGDTrainer",
      trainer_doc("MomentumSGDTrainer", "SGD with momentum.",
                  "    learning_rate (float): η. Defaults to 0.01.\n"
                  "    mom (float): The momentum μ. Defaults to 0.9."))
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "learning_rate"_a = 0.01, "mom"_a = 0.9, nb::keep_alive<1, 2>());
  nb::class_<AdagradTrainer, Trainer>(m, "AdagradTrainer",
      trainer_doc("AdagradTrainer", "Adagrad: per-value rates from the accumulated squared gradients.",
                  "    learning_rate (float): η. Defaults to 0.1.\n"
                  "    eps (float): ε. Defaults to 1e-20."))
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "learning_rate"_a = 0.1, "eps"_a = 1e-20, nb::keep_alive<1, 2>());
  nb::class_<AdadeltaTrainer, Trainer>(m, "AdadeltaTrainer",
      trainer_doc("AdadeltaTrainer", "Adadelta: no learning rate, steps scaled by the running RMS of past steps.",
                  "    eps (float): ε. Defaults to 1e-06.\n"
                  "    rho (float): ρ, the decay of the running averages. Defaults to 0.95."))
      .def(nb::init<ParameterCollection&, float, float>(), "m"_a, "eps"_a = 1e-6, "rho"_a = 0.95, nb::keep_alive<1, 2>());
  // Python's RMSProp defaults differ from C++'s (DyNet's Python module used lr 0.001, eps 1e-8, rho 0.9).
  nb::class_<RMSPropTrainer, Trainer>(m, "RMSPropTrainer",
      trainer_doc("RMSPropTrainer", "RMSProp: steps divided by the running RMS of the gradient.",
                  "    learning_rate (float): η. Defaults to 0.001.\n"
                  "    eps (float): ε. Defaults to 1e-08.\n"
                  "    rho (float): ρ, the decay of the running average. Defaults to 0.9."))
      .def(nb::init<ParameterCollection&, float, float, float>(), "m"_a, "learning_rate"_a = 0.001, "eps"_a = 1e-8,
           "rho"_a = 0.9, nb::keep_alive<1, 2>());
  nb::class_<AdamTrainer, Trainer>(m, "AdamTrainer",
      trainer_doc("AdamTrainer", "Adam (Kingma and Ba, 2015).",
                  "    alpha (float): The learning rate η. Defaults to 0.001.\n"
                  "    beta_1 (float): β₁, the decay of the first moment. Defaults to 0.9.\n"
                  "    beta_2 (float): β₂, the decay of the second moment. Defaults to 0.999.\n"
                  "    eps (float): ε. Defaults to 1e-08."))
      .def(nb::init<ParameterCollection&, float, float, float, float>(), "m"_a, "alpha"_a = 0.001, "beta_1"_a = 0.9,
           "beta_2"_a = 0.999, "eps"_a = 1e-8, nb::keep_alive<1, 2>());
  nb::class_<AmsgradTrainer, Trainer>(m, "AmsgradTrainer",
      trainer_doc("AmsgradTrainer", "AMSGrad: Adam with the running maximum of the second moment.",
                  "    alpha (float): The learning rate η. Defaults to 0.001.\n"
                  "    beta_1 (float): β₁, the decay of the first moment. Defaults to 0.9.\n"
                  "    beta_2 (float): β₂, the decay of the second moment. Defaults to 0.999.\n"
                  "    eps (float): ε. Defaults to 1e-08."))
      .def(nb::init<ParameterCollection&, float, float, float, float>(), "m"_a, "alpha"_a = 0.001, "beta_1"_a = 0.9,
           "beta_2"_a = 0.999, "eps"_a = 1e-8, nb::keep_alive<1, 2>());

  // ---- asynchronous training (dynet::AsynchronousTraining, for Python threads) ----
  struct PyAsynchronousTraining {
    std::unique_ptr<AsynchronousTraining> session;
    std::thread::id thread;
    ~PyAsynchronousTraining() {
      // Collected on another thread while entered: the session is that thread's (a thread-local count),
      // so it is kept, and parameter nodes go on copying values (still correct, a little slower).
      if (session && thread != std::this_thread::get_id()) (void)session.release();
    }
  };
  nb::class_<PyAsynchronousTraining>(m, "AsynchronousTraining",
      "Hogwild-style training for the thread inside the block: `with dy.AsynchronousTraining():` around a "
      "worker's loop.\n\n"
      "Inside, update() does not stop the other threads' forward and backward passes (as it does otherwise, "
      "so that they never read a value it is writing): it locks one parameter at a time, and while any "
      "thread is inside such a block, graphs read copies of the parameters, each as it was before or after "
      "an update, never half-written. Every gradient is still applied exactly once. Threads that each "
      "update after their own examples then train at once instead of taking turns. The updates of one "
      "trainer take turns; give each thread its own trainer for updates that run at once too.\n\n"
      "Enter and leave it on the same thread, not while that thread computes a graph. An update inside "
      "refuses lazy L2 weight decay (ParameterCollection.set_weight_decay_lambda), which needs the other "
      "threads stopped.")
      .def(nb::init<>())
      .def("__enter__", [](PyAsynchronousTraining& a) {
        if (a.session) throw std::runtime_error("AsynchronousTraining: already entered");
        {
          nb::gil_scoped_release released;  // waits for the passes in progress on other threads
          a.session = std::make_unique<AsynchronousTraining>();
        }
        a.thread = std::this_thread::get_id();
        return &a;
      }, nb::rv_policy::reference)
      .def("__exit__", [](PyAsynchronousTraining& a, nb::args) {
        if (!a.session) return;
        if (a.thread != std::this_thread::get_id())
          throw std::runtime_error("AsynchronousTraining: leave it on the thread that entered it");
        nb::gil_scoped_release released;
        a.session.reset();
      });

  // ---- RNN builders (state objects are Python: dynet/__init__.py) ----
  const char* set_dropouts_doc =
      "Sets dropout on the inputs and on the recurrent state (applied from the next initial_state).\n\n"
      "Args:\n    d (float): The dropout rate of the inputs.\n    {h} (float): The dropout rate of the recurrent state.\n\n"
      "Returns:\n    None";
  auto dropouts_doc = [set_dropouts_doc](const char* h) {
    static std::vector<std::unique_ptr<std::string>> keep;
    std::string s = set_dropouts_doc;
    s.replace(s.find("{h}"), 3, h);
    keep.push_back(std::make_unique<std::string>(s));
    return keep.back()->c_str();
  };
  const char* masks_doc =
      "Draws new dropout masks (one per batch element); call after initial_state when the batch size changes.\n\n"
      "Args:\n    batch_size (int): The number of batch elements. Defaults to 1.\n\n"
      "Returns:\n    None";
  nb::class_<RNNBuilder>(m, "_RNNBuilder", "The C++ base of the RNN builders.")
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
      .def("param_collection", [](RNNBuilder& b) { return b.get_parameter_collection(); },
           "The collection holding the builder's parameters.\n\n"
           "Returns:\n    ParameterCollection: the builder's subcollection.")
      .def("set_dropout", [](RNNBuilder& b, float p) { b.set_dropout(p); }, "f"_a,
           "Sets the dropout rate (applied from the next initial_state).\n\n"
           "Args:\n    f (float): The probability of dropping each value.\n\n"
           "Returns:\n    None")
      .def("disable_dropout", [](RNNBuilder& b) { b.disable_dropout(); },
           "Turns dropout off (for evaluation).\n\n"
           "Returns:\n    None")
      .def("get_parameters", [](RNNBuilder& b) {
        return with_layers(b, [](auto& x) {
          std::vector<std::vector<PyParameters>> out;
          for (auto& layer : x.get_parameters()) {
            out.emplace_back();
            for (auto& p : layer) out.back().push_back({p, {}});
          }
          return out;
        });
      }, "The builder's parameters, layer by layer.\n\n"
         "Returns:\n    list[list[Parameters]]: for each layer, its weight matrices and biases.")
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
      }, "The expressions of the builder's parameters in the current graph, layer by layer.\n\n"
         "Returns:\n    list[list[Expression]]: valid after initial_state() in the current graph.\n\n"
         "Raises:\n    ValueError: before initial_state() in the current graph.");
  nb::class_<SimpleRNNBuilder, RNNBuilder>(m, "SimpleRNNBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&, truthy>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "support_lags"_a = false, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](SimpleRNNBuilder& b, float d, float dh) { b.set_dropout(d, dh); }, "d"_a, "d_h"_a,
           dropouts_doc("d_h"))
      .def("set_dropout_masks", [](SimpleRNNBuilder& b, int_arg<unsigned> bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1,
           masks_doc);
  nb::class_<VanillaLSTMBuilder, RNNBuilder>(m, "VanillaLSTMBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&, truthy, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.0, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](VanillaLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a,
           dropouts_doc("d_r"))
      .def("set_dropout_masks", [](VanillaLSTMBuilder& b, int_arg<unsigned> bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1,
           masks_doc);
  nb::class_<CoupledLSTMBuilder, RNNBuilder>(m, "CoupledLSTMBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());
  nb::class_<CompactVanillaLSTMBuilder, RNNBuilder>(m, "CompactVanillaLSTMBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](CompactVanillaLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a,
           dropouts_doc("d_r"))
      .def("set_dropout_masks", [](CompactVanillaLSTMBuilder& b, int_arg<unsigned> bs) { b.set_dropout_masks(bs); },
           "batch_size"_a = 1, masks_doc)
      .def("set_weightnoise", [](CompactVanillaLSTMBuilder& b, float std) { b.set_weightnoise(std); }, "std"_a,
           "Adds Gaussian noise to the weights in each new graph (training only).\n\n"
           "Args:\n    std (float): The standard deviation of the noise (0: none).\n\n"
           "Returns:\n    None");
  nb::class_<SparseLSTMBuilder, RNNBuilder>(m, "SparseLSTMBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&, truthy, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.0, nb::keep_alive<1, 5>())
      .def("set_sparsity", [](SparseLSTMBuilder& b, float s) { b.set_sparsity(s); }, "sparsity"_a,
           "Sets the fraction of weights masked to zero.\n\n"
           "Args:\n    sparsity (float): The fraction of zero weights, in [0, 1).\n\n"
           "Returns:\n    None")
      .def("set_dropouts", [](SparseLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a,
           dropouts_doc("d_r"))
      .def("set_dropout_masks", [](SparseLSTMBuilder& b, int_arg<unsigned> bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1,
           masks_doc);
  nb::class_<FastLSTMBuilder, RNNBuilder>(m, "FastLSTMBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());

  // ---- softmax builders (the graph's parameters are added on each call, as DyNet's Python does) ----
  const char* update_doc = "    update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.\n";
  auto with_update = [update_doc](const char* head, const char* args, const char* returns) {
    static std::vector<std::unique_ptr<std::string>> keep;
    keep.push_back(std::make_unique<std::string>(std::string(head) + "\n\nArgs:\n" + args + update_doc +
                                                 "\nReturns:\n    " + returns));
    return keep.back()->c_str();
  };
  nb::class_<SoftmaxBuilder>(m, "SoftmaxBuilder", "The base of the softmax output layers.\n\n"
                                        "Made through its subclasses (StandardSoftmaxBuilder, ClassFactoredSoftmaxBuilder).")
      .def("neg_log_softmax", [](SoftmaxBuilder& b, const Expression& x, int_arg<unsigned> c, truthy update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true,
           with_update("The negative log-probability of class c given the hidden state x.",
                       "    x (Expression): The hidden state.\n    c (int): The class.\n",
                       "Expression: the loss, a scalar."))
      .def("neg_log_softmax_batch", [](SoftmaxBuilder& b, const Expression& x, const int_list<unsigned>& c, truthy update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true,
           with_update("The negative log-probabilities of one class per batch element.",
                       "    x (Expression): The hidden states (batched).\n    c (list[int]): One class per batch element.\n",
                       "Expression: the losses, a batched scalar."))
      .def("sample", [](SoftmaxBuilder& b, const Expression& x) {
        b.new_graph(current_graph(), true);
        return b.sample(x);
      }, "x"_a,
           "Draws a class from the distribution given the hidden state x.\n\n"
           "Args:\n    x (Expression): The hidden state.\n\n"
           "Returns:\n    int: the class drawn.")
      .def("full_log_distribution", [](SoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.full_log_distribution(x);
      }, "x"_a, "update"_a = true,
           with_update("The log-probabilities of every class.", "    x (Expression): The hidden state.\n",
                       "Expression: a vector with one log-probability per class."))
      .def("full_logits", [](SoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.full_logits(x);
      }, "x"_a, "update"_a = true,
           with_update("The unnormalized scores of every class.", "    x (Expression): The hidden state.\n",
                       "Expression: a vector with one score per class."))
      .def("param_collection", [](SoftmaxBuilder& b) { return b.get_parameter_collection(); },
           "The collection holding the builder's parameters.\n\n"
           "Returns:\n    ParameterCollection: the builder's subcollection.");
  nb::class_<StandardSoftmaxBuilder, SoftmaxBuilder>(m, "StandardSoftmaxBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&, truthy>(), "input_dim"_a, "num_classes"_a, "pc"_a,
           "bias"_a = true, nb::keep_alive<1, 4>());
  nb::class_<ClassFactoredSoftmaxBuilder, SoftmaxBuilder>(m, "ClassFactoredSoftmaxBuilder",
      "A class-factored softmax: p(w | x) = p(class(w) | x) · p(w | class(w), x), with the word classes read from a "
      "cluster file.\n\n"
      "Args:\n"
      "    input_dim (int): The size of the hidden state.\n"
      "    cluster_file (str): Lines of 'class<TAB>word'.\n"
      "    dic (dict[str, int]): The word ids (0..n-1), as the program's vocabulary assigns them.\n"
      "    pc (ParameterCollection): Where the builder's parameters go.\n"
      "    bias (bool): Whether the layers have biases. Defaults to True.")
      .def("__init__", [](ClassFactoredSoftmaxBuilder* self, int_arg<unsigned> input_dim, const std::string& cluster_file,
                          nb::dict dic, ParameterCollection& pc, truthy bias) {
        Dict d = dict_of(dic);
        new (self) ClassFactoredSoftmaxBuilder(input_dim, cluster_file, d, pc, bias);
      }, "input_dim"_a, "cluster_file"_a, "dic"_a, "pc"_a, "bias"_a = true, nb::keep_alive<1, 5>())
      .def("class_log_distribution", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.class_log_distribution(x);
      }, "x"_a, "update"_a = true,
           with_update("The log-probabilities of the word classes.", "    x (Expression): The hidden state.\n",
                       "Expression: a vector with one log-probability per class."))
      .def("class_logits", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, truthy update) {
        b.new_graph(current_graph(), update);
        return b.class_logits(x);
      }, "x"_a, "update"_a = true,
           with_update("The unnormalized scores of the word classes.", "    x (Expression): The hidden state.\n",
                       "Expression: a vector with one score per class."))
      .def("subclass_log_distribution", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, int_arg<unsigned> classid, truthy update) {
        b.new_graph(current_graph(), update);
        return b.subclass_log_distribution(x, classid);
      }, "x"_a, "classid"_a, "update"_a = true,
           with_update("The log-probabilities of the words of one class.",
                       "    x (Expression): The hidden state.\n    classid (int): The class.\n",
                       "Expression: a vector with one log-probability per word of the class."))
      .def("subclass_logits", [](ClassFactoredSoftmaxBuilder& b, const Expression& x, int_arg<unsigned> classid, truthy update) {
        b.new_graph(current_graph(), update);
        return b.subclass_logits(x, classid);
      }, "x"_a, "classid"_a, "update"_a = true,
           with_update("The unnormalized scores of the words of one class.",
                       "    x (Expression): The hidden state.\n    classid (int): The class.\n",
                       "Expression: a vector with one score per word of the class."));
  nb::class_<GRUBuilder, RNNBuilder>(m, "GRUBuilder")
      .def(nb::init<int_arg<unsigned>, int_arg<unsigned>, int_arg<unsigned>, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());
}

}  // namespace dynet::py
