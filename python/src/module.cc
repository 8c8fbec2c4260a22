// The module: Expression methods, graph functions, parameters, initializers, parameter collections,
// model files, configuration, and the op functions the module converts itself ("@name" entries). The
// other op functions come from ops.cc (generated from the API entries); trainers and builders from
// builders.cc; numpy and dy.Tensor from arrays.cc.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/device.h"
#include "dynet/except.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "dynet/io.h"
#include "dynet/param-init.h"
#include "ext.h"

namespace dynet::py {
using namespace nb::literals;

std::unordered_map<std::string, nb::object>& custom_ops() {
  static std::unordered_map<std::string, nb::object> m;
  return m;
}

namespace {
// The executor a renewed graph gets, as DyNet's renew_cg makes a new graph: autobatching None follows
// --dynet-autobatch / dynet_config's autobatch; True the autobatching executor (strategy 1 unless the
// flag says 2); False the simple one.
int strategy_for(nb::handle autobatching) {
  if (autobatching.is_none()) return std::max(autobatch_flag, 0);
  const int on = PyObject_IsTrue(autobatching.ptr());  // any object by its truth value, as a Cython bint
  if (on < 0) throw nb::python_error();
  return on ? (autobatch_flag > 0 ? autobatch_flag : 1) : 0;
}

Expression expr_of(nb::handle h) {
  Expression e;
  if (!to_expr(h.ptr(), e)) {
    if (PyErr_Occurred()) throw nb::python_error();
    throw nb::type_error("expected an Expression");
  }
  return e;
}

void check_live(const Expression& e) {
  if (e.is_stale()) throw stale_expression("Attempt to use a stale expression.");
}

const Tensor& value_of(const Expression& e, bool recalculate) {
  check_live(e);
  if (recalculate) return e.pg->forward(e);
  return e.pg->incremental_forward(e);
}

// An updatable input (vecInput, inputVector, inputTensor, scalarInput, ...): values the graph reads at
// each forward; .set() writes them and invalidates the graph.
PyObject* updatable_input(const Dim& d, std::vector<float> values, nb::handle device = nb::none()) {
  Device* on = device_from(device.ptr());  // before the values are stored: an unknown device leaves no trace
  std::vector<float>& storage = current_inputs().values.emplace_back(std::move(values));
  PyObject* o = wrap(input(current_graph(), d, &storage, on), Settable::Values, &storage);
  if (!o) throw nb::python_error();
  return o;
}

// Expression.set / set_index: new values for an updatable input, a new index (list) for a lookup or
// a pick. The count cannot change: the dims of the nodes built on it were fixed at construction.
void set_expression(nb::handle self, nb::handle value) {
  if (!PyObject_TypeCheck(self.ptr(), ExprType)) throw nb::type_error("set: expected an Expression");
  PyExpr* p = reinterpret_cast<PyExpr*>(self.ptr());
  if (p->kind == Settable::None)
    throw std::invalid_argument("set: this expression cannot be updated (only inputs made by vecInput, inputVector, "
                                "inputTensor, scalarInput, matInput and inputMatrix, and lookups and picks can)");
  if (p->e.is_stale()) throw stale_expression("set: Attempt to use a stale expression.");
  switch (p->kind) {
    case Settable::Values: {
      auto& v = *static_cast<std::vector<float>*>(p->slot);
      std::vector<float> nv;
      if (PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr())) nv = {nb::cast<float>(value)};
      else nv = from_array(value, "set").values;
      if (nv.size() != v.size())
        throw std::invalid_argument("set: expected " + std::to_string(v.size()) + " values, got " + std::to_string(nv.size()));
      v = std::move(nv);
      break;
    }
    case Settable::Index: {
      *static_cast<unsigned*>(p->slot) = static_cast<unsigned>(int_in_range(value, 0, 0xffffffffLL, "set"));
      break;
    }
    case Settable::Indices: {
      auto& v = *static_cast<std::vector<unsigned>*>(p->slot);
      if (PyUnicode_Check(value.ptr()) || !PySequence_Check(value.ptr()))
        throw nb::type_error("set: the indices must be a sequence of ints");
      std::vector<unsigned> nv;
      for (nb::handle x : nb::borrow<nb::sequence>(value))
        nv.push_back(static_cast<unsigned>(int_in_range(x, 0, 0xffffffffLL, "set")));
      if (nv.size() != v.size())
        throw std::invalid_argument("set: expected " + std::to_string(v.size()) + " indices (one per batch element), got " +
                                    std::to_string(nv.size()));
      v = std::move(nv);
      break;
    }
    case Settable::None: break;
  }
  p->e.pg->invalidate();
}

// The node of graph g that `index` names: an expression of g, or a node index.
VariableIndex node_of(ComputationGraph& g, nb::handle index) {
  Expression e;
  if (to_expr(index.ptr(), e)) {
    check_live(e);
    if (e.pg != &g) throw std::invalid_argument("the expression belongs to another ComputationGraph");
    return e.i;
  }
  if (PyErr_Occurred()) throw nb::python_error();
  const long long i = int_in_range(index, LLONG_MIN, LLONG_MAX, "node index");
  if (i < 0 || i >= static_cast<long long>(g.size()))
    throw nb::index_error(("node index " + std::to_string(i) + " out of range for a graph of " + std::to_string(g.size()) +
                           " nodes").c_str());
  return static_cast<VariableIndex>(i);
}

// A lookup whose index (list) `.set()` can change, as the generated dy.lookup / dy.lookup_batch make.
nb::object settable_lookup(const LookupParameter& p, unsigned i) {
  unsigned* slot = &current_inputs().indices.emplace_back(i);
  return nb::steal(wrap(lookup(current_graph(), p, slot), Settable::Index, slot));
}
nb::object settable_lookup(const LookupParameter& p, std::vector<unsigned> ids) {
  std::vector<unsigned>* slot = &current_inputs().index_lists.emplace_back(std::move(ids));
  return nb::steal(wrap(lookup(current_graph(), p, slot), Settable::Indices, slot));
}

template <class P>
void save_param(P& p, const std::string& fname, const std::string& key, bool append) {
  TextFileSaver(fname, append).save(p.p, key);
}
template <class P>
void populate_param(P& p, const std::string& fname, const std::string& key) {
  TextFileLoader(fname).populate(p.p, key);
}

// dy.PyInitializer and its subclasses (NormalInitializer, ...; classes in dynet/__init__.py).
struct PyInit {
  std::shared_ptr<ParameterInit> init;
  bool from_numpy = false;  // NumpyInitializer: not for lookup tables (as in DyNet)
};

// add_parameters' `init`: None (the default: nullptr), a number (constant), an initializer object, or
// one of DyNet's names, which use scale (uniform), mean and std (normal).
std::shared_ptr<ParameterInit> initializer(const char* fn, nb::handle init, const std::vector<unsigned>& dims,
                                           float scale, float mean, float std) {
  if (init.is_none()) return nullptr;
  if (nb::isinstance<PyInit>(init)) {
    PyInit* in = nb::inst_ptr<PyInit>(init);
    if (!in->init) throw std::invalid_argument(std::string(fn) + ": the initializer was not set up (PyInitializer() alone)");
    return in->init;
  }
  if ((PyFloat_Check(init.ptr()) || PyLong_Check(init.ptr())) && !PyBool_Check(init.ptr()))
    return std::make_shared<ParameterInitConst>(nb::cast<float>(init));
  if (nb::isinstance<nb::str>(init)) {
    const std::string name = nb::cast<std::string>(init);
    if (name == "uniform") return std::make_shared<ParameterInitUniform>(scale);
    if (name == "normal") return std::make_shared<ParameterInitNormal>(mean, std * std);
    if (name == "glorot") return std::make_shared<ParameterInitGlorot>(false);
    if (name == "identity") return std::make_shared<ParameterInitIdentity>();
    if (name == "saxe") return std::make_shared<ParameterInitSaxe>(scale);
    // The numbers of DyNet's Python module: N(0, 1 / (2 · last dim)).
    if (name == "he") return std::make_shared<ParameterInitNormal>(0.f, 0.5f / static_cast<float>(dims.empty() ? 1 : dims.back()));
    throw std::invalid_argument(std::string(fn) + ": Didn't recognize initializer '" + name +
                                "' (uniform, normal, glorot, he, identity, saxe)");
  }
  throw nb::type_error((std::string(fn) + ": init must be None, a number, a string, a numpy array or an initializer "
                        "(dy.*Initializer)").c_str());
}

// A shape as DyNet's Cython module took one: an int or a sequence of them, floats truncated.
std::vector<unsigned> dims_of(nb::handle dim, const char* fn) {
  auto one = [fn](nb::handle o) { return static_cast<unsigned>(int_or_float_in_range(o, 0, 0xffffffffLL, fn)); };
  PyObject* o = dim.ptr();
  if ((PyIndex_Check(o) && !PySequence_Check(o)) || PyFloat_Check(o)) return {one(o)};  // not a numpy array
  if (PyUnicode_Check(o) || PyBytes_Check(o) || !PySequence_Check(o))
    throw nb::type_error((std::string(fn) + ": dim must be an int or a sequence of ints, got " + Py_TYPE(o)->tp_name)
                             .c_str());
  std::vector<unsigned> dims;
  for (nb::handle d : nb::borrow<nb::sequence>(dim)) dims.push_back(one(d));
  return dims;
}

}  // namespace

namespace {
PyTypeObject* g_params_type = nullptr;  // dy.Parameters and dy.LookupParameters: the exact-type fast path
PyTypeObject* g_lookups_type = nullptr;
}  // namespace

bool param_to_expr(PyObject* o, Expression& out) {
  try {
    if (Py_TYPE(o) == g_params_type) {
      out = nb::inst_ptr<PyParameters>(o)->expr(true);
      return true;
    }
    if (Py_TYPE(o) == g_lookups_type) {
      out = nb::inst_ptr<PyLookupParameters>(o)->expr(true);
      return true;
    }
    if (nb::inst_check(o)) {
      nb::handle h(o);
      if (nb::isinstance<PyParameters>(h)) {
        out = nb::inst_ptr<PyParameters>(h)->expr(true);
        return true;
      }
      if (nb::isinstance<PyLookupParameters>(h)) {
        out = nb::inst_ptr<PyLookupParameters>(h)->expr(true);
        return true;
      }
    }
  } catch (...) {
    raise_from_cpp();
  }
  return false;
}

bool to_parameter(PyObject* o, Parameter& out) {
  nb::handle h(o);
  if (!nb::inst_check(h) || !nb::isinstance<PyParameters>(h)) return false;
  out = nb::inst_ptr<PyParameters>(h)->p;
  return true;
}
bool to_lookup_parameter(PyObject* o, LookupParameter& out) {
  nb::handle h(o);
  if (!nb::inst_check(h) || !nb::isinstance<PyLookupParameters>(h)) return false;
  out = nb::inst_ptr<PyLookupParameters>(h)->p;
  return true;
}

void init_module(nb::module_& m) {
  nb::handle E(reinterpret_cast<PyObject*>(ExprType));
  auto method = [&](const char* name, auto&& f, auto... extra) {
    nb::object fn = nb::cpp_function(std::forward<decltype(f)>(f), nb::name(name), nb::is_method(), nb::scope(E), extra...);
    nb::setattr(E, name, fn);
  };
  // ---- Expression ----
  method("value", [](const Expression& e, truthy recalculate) -> nb::object {
    // DyNet's value(): a float for a one-element vector, a list for a vector (all batch elements in a row),
    // else npvalue() (a 1x1 matrix too)
    const Tensor& t = value_of(e, recalculate);
    if (t.d.nd <= 1 && t.d.size() == 1) return nb::float_(t.v[0]);
    if (t.d.nd == 1) return nb::cast(std::vector<float>(t.v, t.v + t.d.size()));
    return to_numpy(t);
  }, "recalculate"_a = false);
  method("npvalue", [](const Expression& e, truthy recalculate) { return to_numpy(value_of(e, recalculate)); },
         "recalculate"_a = false);
  method("scalar_value", [](const Expression& e, truthy recalculate) {
    const Tensor& t = value_of(e, recalculate);
    if (t.d.size() != 1) throw std::invalid_argument("scalar_value: the expression has dim " + t.d.str() + ", not a scalar");
    return t.v[0];
  }, "recalculate"_a = false);
  method("vec_value", [](const Expression& e, truthy recalculate) {
    const Tensor& t = value_of(e, recalculate);
    return std::vector<float>(t.v, t.v + t.d.size());
  }, "recalculate"_a = false);
  method("tensor_value", [](const Expression& e, truthy recalculate) { return tensor_of(value_of(e, recalculate)); },
         "recalculate"_a = false);
  method("forward", [](const Expression& e, truthy recalculate) { value_of(e, recalculate); }, "recalculate"_a = false);
  method("gradient", [](const Expression& e) {
    check_live(e);
    return to_numpy(e.gradient());
  });
  method("backward", [](const Expression& e, truthy full) {
    check_live(e);
    e.pg->incremental_forward(e);
    e.pg->backward(e, full);
  }, "full"_a = false);
  method("dim", [](const Expression& e) {
    check_live(e);
    const Dim& d = e.dim();
    std::vector<unsigned> dims(d.d, d.d + d.nd);
    return std::make_pair(nb::tuple(nb::cast(dims)), d.bd);
  });
  method("__repr__", [](const Expression& e) {
    if (e.is_stale()) return std::string("expression (stale)");
    return "expression " + std::to_string(e.i) + "/" + std::to_string(e.graph_id) + " " + e.dim().str();
  });
  method("set", set_expression, "x"_a);
  method("set_index", set_expression, "i"_a);
  // DLPack: the value as a CPU tensor (a copy, as npvalue()).
  method("__dlpack__", [](const Expression& e, nb::kwargs) { return to_numpy_float32(value_of(e, false)).attr("__dlpack__")(); });
  method("__dlpack_device__", [](const Expression&) { return std::make_pair(1, 0); });  // kDLCPU, device 0
  method("__getitem__", [](const Expression& e, nb::handle key) -> Expression {
    check_live(e);
    if (PyLong_Check(key.ptr())) {
      long long i = int_in_range(key, LLONG_MIN, LLONG_MAX, "Expression index");
      const long long n = e.dim()[0];
      if (i < 0) i += n;
      if (i < 0 || i >= n) throw nb::index_error("index out of range");
      return pick(e, static_cast<unsigned>(i), 0);
    }
    std::vector<nb::handle> keys;
    if (PySlice_Check(key.ptr())) keys.push_back(key);
    else if (PyTuple_Check(key.ptr())) for (nb::handle h : nb::tuple(nb::borrow(key))) keys.push_back(h);
    else throw nb::type_error("Expression indices must be ints, slices or tuples of them");
    const Dim& d = e.dim();
    std::vector<int> strides, from, to;
    Expression x = e;
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!PySlice_Check(keys[k].ptr())) throw nb::type_error("Expression: tuple indices must be slices");
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(keys[k].ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      // The index after the dims is the batch's (DyNet: x[:, :, 1:] of a batched matrix slices the batch).
      PySlice_AdjustIndices(k < d.nd ? d[k] : k == d.nd ? d.bd : 1, &start, &stop, step);
      if (step <= 0) throw std::invalid_argument("Expression slices need a positive step");
      strides.push_back(static_cast<int>(step));
      from.push_back(static_cast<int>(start));
      to.push_back(static_cast<int>(stop));
    }
    return strided_select(x, strides, from, to);
  });

  // ---- graphs ----
  struct PyGraph {
    std::unique_ptr<ComputationGraph> owned_g;
    std::unique_ptr<GraphInputs> owned_in;
    ComputationGraph* g;
    GraphInputs* in;
    void renew(bool immediate_compute, bool check_validity, nb::handle autobatching) {
      g->renew(strategy_for(autobatching));
      in->clear();
      g->set_immediate_compute(immediate_compute);
      g->set_check_validity(check_validity);
      if (g == &global_graph()) ++global_graph_version();
    }
  };
  nb::class_<PyGraph>(m, "ComputationGraph",
                      "A computation graph. dy.cg() is the global one; `with dy.ComputationGraph():` builds "
                      "into a new graph in this thread (one graph per thread for data parallelism).")
      .def("__init__", [](PyGraph* self) {
        new (self) PyGraph{std::make_unique<ComputationGraph>(), std::make_unique<GraphInputs>(), nullptr, nullptr};
        self->g = self->owned_g.get();
        self->in = self->owned_in.get();
      })
      .def("__enter__", [](PyGraph& self) { push_graph(self.g, self.in); return &self; }, nb::rv_policy::reference)
      .def("__exit__", [](PyGraph& self, nb::args) { pop_graph(self.g); })
      .def("renew", [](PyGraph& self, truthy immediate_compute, truthy check_validity, nb::object autobatching) {
        self.renew(immediate_compute, check_validity, autobatching);
      }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none())
      .def("version", [](PyGraph& self) { return self.g == &global_graph() ? global_graph_version() : self.g->get_id(); })
      .def("checkpoint", [](PyGraph& self) { self.g->checkpoint(); })
      .def("revert", [](PyGraph& self) { self.g->revert(); })
      .def("print_graphviz", [](PyGraph& self) { write_stdout(graphviz_text(*self.g)); })
      .def("graphviz", [](PyGraph& self) { return graphviz_text(*self.g); },
           "The graph in graphviz dot format (what print_graphviz() writes to sys.stdout).\n\nReturns:\n    str: one node per line, labelled like \"N1 = parameter(/W) {8,2}\", then the edges.")
      .def("dump", [](PyGraph& self, const std::string& f, truthy v, truthy gr, truthy n) { dump_graph(*self.g, f, v, gr, n); },
           "filename"_a, "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false)
      .def("size", [](PyGraph& self) { return self.g->size(); })
      // DyNet's lower-level graph methods: `index` is an expression (or its node index in this graph).
      .def("forward", [](PyGraph& self, nb::handle index) { self.g->forward(node_of(*self.g, index)); }, "index"_a)
      .def("inc_forward", [](PyGraph& self, nb::handle index) { self.g->incremental_forward(node_of(*self.g, index)); }, "index"_a)
      .def("forward_scalar", [](PyGraph& self, nb::handle index) { return as_scalar(self.g->forward(node_of(*self.g, index))); }, "index"_a)
      .def("inc_forward_scalar", [](PyGraph& self, nb::handle index) {
        return as_scalar(self.g->incremental_forward(node_of(*self.g, index)));
      }, "index"_a)
      .def("forward_vec", [](PyGraph& self, nb::handle index) { return as_vector(self.g->forward(node_of(*self.g, index))); }, "index"_a)
      .def("inc_forward_vec", [](PyGraph& self, nb::handle index) {
        return as_vector(self.g->incremental_forward(node_of(*self.g, index)));
      }, "index"_a)
      .def("backward", [](PyGraph& self, nb::handle index, truthy full) {
        const VariableIndex i = node_of(*self.g, index);
        self.g->incremental_forward(i);
        self.g->backward(i, full);
      }, "index"_a, "full"_a = false)
      .def("inputMatrixLiteral", [](PyGraph& self, std::vector<float> v, std::vector<unsigned> d, unsigned batch_size, nb::handle device) {
        return input(*self.g, make_dim(d, batch_size, "inputMatrixLiteral"), v, device_from(device.ptr()));
      }, "v"_a, "d"_a, "batch_size"_a = 1, "device"_a = "")
      .def("inputSparseTensor", [](PyGraph& self, std::vector<unsigned> idxs, std::vector<float> v, std::vector<unsigned> dim,
                                   unsigned batch_size, float defval, nb::handle device) {
        return input(*self.g, make_dim(dim, batch_size, "inputSparseTensor"), idxs, v, defval, device_from(device.ptr()));
      }, "idxs"_a, "v"_a, "dim"_a, "batch_size"_a = 1, "defval"_a = 0.f, "device"_a = "");
  // The global graph's wrapper lives as long as the module (a module attribute; no C++ static owns it,
  // so nothing is released after the interpreter has gone).
  nb::object global_wrapper_obj = nb::inst_alloc(nb::type<PyGraph>());
  new (nb::inst_ptr<PyGraph>(global_wrapper_obj)) PyGraph{nullptr, nullptr, &global_graph(), &global_inputs()};
  nb::inst_mark_ready(global_wrapper_obj);
  m.attr("_global_cg") = global_wrapper_obj;
  nb::handle global_wrapper = global_wrapper_obj;
  m.def("renew_cg", [global_wrapper](truthy immediate_compute, truthy check_validity, nb::object autobatching) {
    ComputationGraph& g = current_graph();
    g.renew(strategy_for(autobatching));
    current_inputs().clear();
    g.set_immediate_compute(immediate_compute);
    g.set_check_validity(check_validity);
    if (&g == &global_graph()) ++global_graph_version();
    return nb::borrow(global_wrapper);
  }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none());
  m.def("cg", [global_wrapper] { return nb::borrow(global_wrapper); });
  m.def("cg_version", [] { return global_graph_version(); });
  m.def("cg_checkpoint", [] { current_graph().checkpoint(); });
  m.def("cg_revert", [] { current_graph().revert(); });
  m.def("print_text_graphviz", [] { write_stdout(graphviz_text(current_graph())); });
  m.def("dump_cg", [](const std::string& f, truthy v, truthy g, truthy n) { dump_graph(current_graph(), f, v, g, n); },
        "filename"_a = "", "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false);
  m.def("forward", [](nb::sequence exps, truthy recalculate) {
    Expression last;
    for (nb::handle h : exps) {
      Expression e = expr_of(h);
      if (last.pg == nullptr || e.i > last.i) last = e;
    }
    if (last.pg) value_of(last, recalculate);
  }, "exps"_a, "recalculate"_a = false);

  // ---- initializers ----
  nb::class_<PyInit>(m, "PyInitializer", nb::dynamic_attr(), "The base of DyNet's parameter initializers.")
      .def(nb::init<>());
  // The subclasses' __init__ (dynet/__init__.py) set the C++ initializer with these.
  m.def("_init_normal", [](PyInit& self, float mean, float var) { self.init = std::make_shared<ParameterInitNormal>(mean, var); });
  m.def("_init_uniform", [](PyInit& self, float scale) { self.init = std::make_shared<ParameterInitUniform>(scale); });
  m.def("_init_const", [](PyInit& self, float c) { self.init = std::make_shared<ParameterInitConst>(c); });
  m.def("_init_identity", [](PyInit& self) { self.init = std::make_shared<ParameterInitIdentity>(); });
  m.def("_init_glorot", [](PyInit& self, truthy is_lookup, float gain) { self.init = std::make_shared<ParameterInitGlorot>(is_lookup, gain); });
  m.def("_init_saxe", [](PyInit& self, float scale) { self.init = std::make_shared<ParameterInitSaxe>(scale); });
  m.def("_init_fromfile", [](PyInit& self, std::string f) { self.init = std::make_shared<ParameterInitFromFile>(f); });
  m.def("_init_vector", [](PyInit& self, nb::handle arr) {
    self.init = std::make_shared<ParameterInitFromVector>(from_array(arr, "NumpyInitializer").values);
    self.from_numpy = true;
  });

  // ---- Parameters and LookupParameters: expressions of the current graph wherever one is expected
  // (DyNet 2.1's Parameters(Expression)), with the Expression's operators and value methods ----
  nb::class_<PyParameters> params(m, "Parameters", nb::type_slots(expression_number_slots()));
  params.def("expr", [](PyParameters& p, truthy update) { return p.expr(update); }, "update"_a = false)
      .def("shape", [](PyParameters& p) { Dim d = p.p.dim(); return nb::tuple(nb::cast(std::vector<unsigned>(d.d, d.d + d.nd))); })
      .def("as_array", [](PyParameters& p) { return to_numpy(*p.p.values()); })
      .def("grad_as_array", [](PyParameters& p) { return to_numpy(*p.p.gradients()); })
      .def("set_value", [](PyParameters& p, nb::handle arr) {
        auto [dims, v] = from_array(arr, "set_value");
        if (v.size() != p.p.dim().size())
          throw std::invalid_argument("set_value: " + std::to_string(v.size()) + " values for a parameter of dim " + p.p.dim().str());
        p.p.set_value(v);
      }, "arr"_a)
      .def("clip_inplace", [](PyParameters& p, float l, float r) { p.p.clip_inplace(l, r); }, "left"_a, "right"_a)
      .def("zero", [](PyParameters& p) { p.p.zero(); })
      .def("scale", [](PyParameters& p, float s) { p.p.scale(s); }, "s"_a)
      .def("scale_gradient", [](PyParameters& p, float s) { p.p.scale_gradient(s); }, "s"_a)
      .def("is_updated", [](PyParameters& p) { return p.p.is_updated(); })
      .def("set_updated", [](PyParameters& p, truthy b) { p.p.set_updated(b); }, "b"_a)
      .def("name", [](PyParameters& p) { return p.p.get_fullname(); })
      .def("save", &save_param<PyParameters>, "fname"_a, "key"_a = "", "append"_a = false)
      .def("write_to_textfile", &save_param<PyParameters>, "fname"_a, "key"_a = "", "append"_a = false)
      .def("populate", &populate_param<PyParameters>, "fname"_a, "key"_a = "")
      .def("populate_from_textfile", &populate_param<PyParameters>, "fname"_a, "key"_a = "");
  nb::class_<PyLookupParameters> lookups(m, "LookupParameters", nb::type_slots(expression_number_slots()));
  lookups.def("expr", [](PyLookupParameters& p, truthy update) { return p.expr(update); }, "update"_a = true)
      .def("shape", [](PyLookupParameters& p) {
        Dim d = p.p.dim();
        std::vector<unsigned> s{static_cast<unsigned>(p.p.get_storage().values.size())};
        for (unsigned k = 0; k < d.nd; ++k) s.push_back(d[k]);
        return nb::tuple(nb::cast(s));
      })
      .def("__len__", [](PyLookupParameters& p) { return p.p.get_storage().values.size(); })
      .def("__getitem__", [](PyLookupParameters& p, row_index i) { return settable_lookup(p.p, i); }, "i"_a)
      .def("batch", [](PyLookupParameters& p, const std::vector<row_index>& rows) {
        return settable_lookup(p.p, std::vector<unsigned>(rows.begin(), rows.end()));
      }, "i"_a)
      .def("init_row", [](PyLookupParameters& p, unsigned i, nb::handle row) {
        p.p.initialize(i, from_array(row, "init_row").values);
      }, "i"_a, "row"_a)
      .def("init_from_array", [](PyLookupParameters& p, nb::handle arr) {
        auto [dims, v] = from_array(arr, "init_from_array");
        auto& st = p.p.get_storage();
        if (dims.empty() || dims[0] != st.values.size() || v.size() != st.all_dim.size())
          throw std::invalid_argument("init_from_array: the array must have one row per entry (" +
                                      std::to_string(st.values.size()) + " rows of " + st.dim.str() + ")");
        const size_t n = dims[0], rs = st.dim.size();
        std::vector<float> row(rs);
        for (size_t r = 0; r < n; ++r) {  // v is column-major over (rows, dims...): row r is strided
          for (size_t k = 0; k < rs; ++k) row[k] = v[r + k * n];
          p.p.initialize(static_cast<unsigned>(r), row);
        }
      }, "arr"_a)
      .def("as_array", [](PyLookupParameters& p) { auto& st = p.p.get_storage(); return rows_to_numpy(st.dim, st.values, nullptr); })
      .def("grad_as_array", [](PyLookupParameters& p) { auto& st = p.p.get_storage(); return rows_to_numpy(st.dim, st.grads, nullptr); })
      .def("row_as_array", [](PyLookupParameters& p, unsigned r) {
        auto& st = p.p.get_storage();
        if (r >= st.values.size()) throw nb::index_error(("row_as_array: row " + std::to_string(r) + " out of range").c_str());
        return to_numpy(st.values[r]);
      }, "row"_a)
      .def("row_grad_as_array", [](PyLookupParameters& p, unsigned r) {
        auto& st = p.p.get_storage();
        if (r >= st.grads.size()) throw nb::index_error(("row_grad_as_array: row " + std::to_string(r) + " out of range").c_str());
        return to_numpy(st.grads[r]);
      }, "row"_a)
      .def("rows_as_array", [](PyLookupParameters& p, std::vector<unsigned> rows) {
        auto& st = p.p.get_storage();
        return rows_to_numpy(st.dim, st.values, &rows);
      }, "rows"_a)
      .def("rows_grad_as_array", [](PyLookupParameters& p, std::vector<unsigned> rows) {
        auto& st = p.p.get_storage();
        return rows_to_numpy(st.dim, st.grads, &rows);
      }, "rows"_a)
      .def("zero", [](PyLookupParameters& p) { p.p.zero(); })
      .def("scale", [](PyLookupParameters& p, float s) { p.p.scale(s); }, "s"_a)
      .def("scale_gradient", [](PyLookupParameters& p, float s) { p.p.scale_gradient(s); }, "s"_a)
      .def("is_updated", [](PyLookupParameters& p) { return p.p.is_updated(); })
      .def("set_updated", [](PyLookupParameters& p, truthy b) { p.p.set_updated(b); }, "b"_a)
      .def("name", [](PyLookupParameters& p) { return p.p.get_fullname(); })
      .def("save", &save_param<PyLookupParameters>, "fname"_a, "key"_a = "", "append"_a = false)
      .def("write_to_textfile", &save_param<PyLookupParameters>, "fname"_a, "key"_a = "", "append"_a = false)
      .def("populate", &populate_param<PyLookupParameters>, "fname"_a, "key"_a = "")
      .def("populate_from_textfile", &populate_param<PyLookupParameters>, "fname"_a, "key"_a = "");
  for (const char* name : {"value", "npvalue", "scalar_value", "vec_value", "tensor_value", "forward", "gradient",
                           "backward", "dim"}) {
    nb::setattr(params, name, nb::getattr(E, name));
    nb::setattr(lookups, name, nb::getattr(E, name));
  }
  nb::setattr(params, "__getitem__", nb::getattr(E, "__getitem__"));
  g_params_type = reinterpret_cast<PyTypeObject*>(params.ptr());
  g_lookups_type = reinterpret_cast<PyTypeObject*>(lookups.ptr());

  // ---- ParameterCollection ----
  auto is_array = [](nb::handle o) { return nb::hasattr(o, "shape") && nb::hasattr(o, "dtype"); };
  auto from_numpy = [](ParameterCollection& pc, nb::handle array, const std::string& name, nb::handle device) {
    auto [dims, v] = from_array(array, "parameters_from_numpy");
    return PyParameters{pc.add_parameters(make_dim(dims, 1, "parameters_from_numpy"), ParameterInitFromVector(v), name,
                                          device_from(device.ptr())), {}};
  };
  auto lookup_from_numpy = [](ParameterCollection& pc, nb::handle array, const std::string& name, nb::handle device) {
    auto [dims, v] = from_array(array, "lookup_parameters_from_numpy");
    if (dims.size() < 2) throw std::invalid_argument("lookup_parameters_from_numpy: the array needs a row per entry (n, d...)");
    const unsigned n = dims[0];
    LookupParameter lp = pc.add_lookup_parameters(n, make_dim(std::vector<unsigned>(dims.begin() + 1, dims.end()), 1, "lookup_parameters_from_numpy"),
                                                  name, device_from(device.ptr()));
    const size_t rs = v.size() / n;
    for (unsigned r = 0; r < n; ++r) {  // v is column-major over (n, d...): row r is strided by n
      std::vector<float> row(rs);
      for (size_t k = 0; k < rs; ++k) row[k] = v[r + k * n];
      lp.initialize(r, row);
    }
    return PyLookupParameters{lp, {}};
  };
  nb::class_<ParameterCollection>(m, "ParameterCollection",
                                  "Holds Parameters and LookupParameters (alias: Model); nested collections name their "
                                  "parameters /outer/inner/name, as in DyNet's model files.")
      .def(nb::init<>())
      .def("add_parameters", [=](ParameterCollection& pc, nb::handle dim, nb::handle init, const std::string& name,
                                 nb::handle device, float scale, float mean, float std) {
        if (is_array(init)) return from_numpy(pc, init, name, device);
        const std::vector<unsigned> dims = dims_of(dim, "add_parameters");
        const Dim d = make_dim(dims, 1, "add_parameters");
        auto in = initializer("add_parameters", init, dims, scale, mean, std);
        Device* on = device_from(device.ptr());
        return PyParameters{in ? pc.add_parameters(d, *in, name, on) : pc.add_parameters(d, 0.f, name, on), {}};
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1.f, "mean"_a = 0.f, "std"_a = 1.f)
      .def("add_lookup_parameters", [=](ParameterCollection& pc, nb::handle dim, nb::handle init, const std::string& name,
                                        nb::handle device, float scale, float mean, float std) {
        if (is_array(init)) return lookup_from_numpy(pc, init, name, device);
        if (nb::isinstance<PyInit>(init) && nb::inst_ptr<PyInit>(init)->from_numpy)
          throw std::invalid_argument("Do not use NumpyInitializer with add_lookup_parameters, use "
                                      "lookup_parameters_from_numpy instead");
        std::vector<unsigned> dims = dims_of(dim, "add_lookup_parameters");
        if (dims.size() == 1 && !PySequence_Check(dim.ptr())) dims.push_back(1);  // DyNet: n rows of {1}
        if (dims.size() < 2) throw std::invalid_argument("add_lookup_parameters: dim must be (n, d...)");
        const Dim d = make_dim(std::vector<unsigned>(dims.begin() + 1, dims.end()), 1, "add_lookup_parameters");
        auto in = initializer("add_lookup_parameters", init, dims, scale, mean, std);
        // DyNet's Python default for tables is Glorot over the whole table (C++'s default treats it per row).
        if (!in) in = std::make_shared<ParameterInitGlorot>(false);
        return PyLookupParameters{pc.add_lookup_parameters(dims[0], d, *in, name, device_from(device.ptr())), {}};
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1.f, "mean"_a = 0.f, "std"_a = 1.f)
      .def("parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle device) {
        return from_numpy(pc, a, name, device);
      }, "array"_a, "name"_a = "", "device"_a = "")
      .def("lookup_parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle device) {
        return lookup_from_numpy(pc, a, name, device);
      }, "array"_a, "name"_a = "", "device"_a = "")
      .def("add_subcollection", [](ParameterCollection& pc, std::optional<std::string> name) {
        return pc.add_subcollection(name.value_or(""));
      }, "name"_a = nb::none())
      .def("parameter_count", &ParameterCollection::parameter_count)
      .def("name", &ParameterCollection::get_fullname)
      .def("get_weight_decay", &ParameterCollection::get_weight_decay_lambda)
      .def("set_weight_decay", &ParameterCollection::set_weight_decay_lambda, "lam"_a)
      .def("set_weight_decay_lambda", &ParameterCollection::set_weight_decay_lambda, "lam"_a)
      .def("parameters_list", [](ParameterCollection& pc) {
        std::vector<PyParameters> out;
        for (auto& s : pc.parameters_list()) out.push_back({Parameter(s), {}});
        return out;
      })
      .def("lookup_parameters_list", [](ParameterCollection& pc) {
        std::vector<PyLookupParameters> out;
        for (auto& s : pc.lookup_parameters_list()) out.push_back({LookupParameter(s), {}});
        return out;
      })
      .def("save", [](ParameterCollection& pc, const std::string& f, const std::string& key, truthy append) {
        TextFileSaver(f, append).save(pc, key);
      }, "fname"_a, "name"_a = "", "append"_a = false)
      .def("write_to_textfile", [](ParameterCollection& pc, const std::string& f, const std::string& key, truthy append) {
        TextFileSaver(f, append).save(pc, key);
      }, "fname"_a, "key"_a = "", "append"_a = false)
      .def("populate", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        TextFileLoader(f).populate(pc, key);
      }, "fname"_a, "key"_a = "")
      .def("populate_from_textfile", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        TextFileLoader(f).populate(pc, key);
      }, "fname"_a, "key"_a = "")
      .def("load_param", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        return PyParameters{TextFileLoader(f).load_param(pc, key), {}};
      }, "fname"_a, "key"_a)
      .def("load_lookup_param", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        return PyLookupParameters{TextFileLoader(f).load_lookup_param(pc, key), {}};
      }, "fname"_a, "key"_a);

  // ---- configuration ----
  m.def("_initialize", [](std::vector<std::string> device_flags, unsigned seed, std::string mem, float wd, int autobatch,
                          int profiling) {
    // dynet::initialize's settings without its banner (the Python module prints nothing unless asked).
    // Pools grow on demand, so --dynet-mem is accepted and not needed.
    (void)mem;
    if (wd < 0.f || wd >= 1.f) throw std::invalid_argument("weight_decay must be in [0, 1)");
    // The device flags (--dynet-gpus, --dynet-gpu-ids, --dynet-devices) go through the C++ parser, and the
    // devices are set up first: a GPU this build or machine lacks fails before any setting changes.
    device_flags.insert(device_flags.begin(), "dynet");
    std::vector<char*> ptrs;
    for (std::string& f : device_flags) ptrs.push_back(f.data());
    ptrs.push_back(nullptr);
    int argc = static_cast<int>(device_flags.size());
    char** argv = ptrs.data();
    setup_devices(extract_dynet_params(argc, argv));
    autobatch_flag = autobatch;
    profiling_flag = profiling;
    // The global graph was made when the module loaded, before the flags: it takes their executor now.
    if (global_graph().size() == 0) global_graph().renew(std::max(autobatch, 0));
    default_weight_decay_lambda = wd;
    reset_rng(seed);
  });
  m.def("_have_cuda", [] { return gpu_runtime() != nullptr; });
  m.def("_devices", [] {
    std::vector<std::tuple<std::string, int, std::string>> r;
    for (Device* d : available_devices())
      r.emplace_back(d->name, d->device_id, d->type == DeviceType::CPU ? "CPU" : "GPU");
    return r;
  });
  m.def("reset_random_seed", [](unsigned seed) { reset_rng(seed); }, "seed"_a);

  // ---- custom op bindings ("@name" entries): numpy arrays and updatable inputs ----
  auto custom = [&](const char* name, auto&& f, auto... args) {
    custom_ops()[name] = nb::cpp_function(std::forward<decltype(f)>(f), nb::name(name), args...);
  };
  custom("inputTensor", [](nb::handle arr, truthy batched, nb::object device, truthy reusable_expr) {
    // A list of numpy arrays is a batch, one element per array (DyNet stacks them on a last axis).
    nb::object stacked;
    if (PyList_Check(arr.ptr()) && PyList_GET_SIZE(arr.ptr()) > 0) {
      nb::object np = nb::module_::import_("numpy"), ndarray = np.attr("ndarray");
      bool all_arrays = true;
      for (nb::handle x : nb::borrow<nb::list>(arr)) all_arrays = all_arrays && nb::isinstance(x, ndarray);
      if (all_arrays) {
        stacked = np.attr("stack")(arr, "axis"_a = -1);
        arr = stacked;
        batched.value = true;
      }
    }
    auto [dims, v] = from_array(arr, "inputTensor");
    unsigned bd = 1;
    if (batched) {
      if (dims.empty()) throw std::invalid_argument("inputTensor: a batched tensor needs a batch axis (the last one)");
      bd = dims.back();
      dims.pop_back();
    }
    const Dim d = make_dim(dims, bd, "inputTensor");
    return nb::steal(updatable_input(d, std::move(v), device));
  }, "arr"_a, "batched"_a = false, "device"_a = "", "reusable_expr"_a = false);
  custom("inputVector", [](nb::handle v, nb::object device) {
    auto [dims, vals] = from_array(v, "inputVector");
    const Dim d({static_cast<unsigned>(vals.size())});  // before vals is moved from
    return nb::steal(updatable_input(d, std::move(vals), device));
  }, "v"_a, "device"_a = "");
  custom("vecInput", [](unsigned dim, nb::object device) {
    return nb::steal(updatable_input(Dim({dim}), std::vector<float>(dim, 0.f), device));
  }, "dim"_a, "device"_a = "");
  custom("scalarInput", [](float s, nb::object device) { return nb::steal(updatable_input(Dim({1}), {s}, device)); },
         "s"_a, "device"_a = "");
  custom("matInput", [](unsigned d1, unsigned d2) {
    return nb::steal(updatable_input(Dim({d1, d2}), std::vector<float>(size_t(d1) * d2, 0.f)));
  }, "d1"_a, "d2"_a);
  custom("inputMatrix", [](std::vector<float> v, std::vector<unsigned> d) {
    if (d.size() != 2) throw std::invalid_argument("inputMatrix: d must be (rows, cols)");
    const Dim dim = make_dim(d, 1, "inputMatrix");
    return nb::steal(updatable_input(dim, std::move(v)));
  }, "v"_a, "d"_a);
  custom("sparse_inputTensor", [](std::vector<std::vector<unsigned>> idxs, std::vector<float> values,
                                  std::vector<unsigned> shape, truthy batched, float defval, nb::object device) {
    if (idxs.size() != shape.size() || shape.empty())
      throw std::invalid_argument("sparse_inputTensor: idxs must give one index list per axis of shape (" +
                                  std::to_string(idxs.size()) + " lists for " + std::to_string(shape.size()) + " axes)");
    unsigned bd = 1;
    if (batched) {
      bd = shape.back();
      shape.pop_back();
    }
    Dim d = make_dim(shape, bd, "sparse_inputTensor");
    std::vector<unsigned> flat;
    const size_t n = idxs[0].size();
    for (size_t k = 0; k < n; ++k) {
      size_t off = 0, stride = 1;
      for (size_t a = 0; a < idxs.size(); ++a) {
        if (idxs[a].size() != n) throw std::invalid_argument("sparse_inputTensor: index lists differ in length");
        off += idxs[a][k] * stride;
        stride *= a < d.nd ? d[a] : d.bd;
      }
      flat.push_back(static_cast<unsigned>(off));
    }
    return input(current_graph(), d, flat, values, defval, device_from(device.ptr()));
  }, "idxs"_a, "values"_a, "shape"_a, "batched"_a = false, "defval"_a = 0.f, "device"_a = "");
}

}  // namespace dynet::py

NB_MODULE(_dynet, m) {
  using namespace dynet::py;
  init_expression(m);
  init_arrays(m);
  init_module(m);
  init_builders(m);
  init_ops(m);
  init_mpi(m);
  init_profiler(m);
  custom_ops().clear();  // the op objects hold them now; no C++ static may outlive the interpreter
}
