// The module: Expression methods, graph functions, parameters, initializers, trainers, builders,
// model files, configuration. The op functions come from ops.cc (generated from the API entries).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "dynet/globals.h"
#include "dynet/cfsm-builder.h"
#include "dynet/fast-lstm.h"
#include "dynet/gru.h"
#include "dynet/init.h"
#include "dynet/io.h"
#include "dynet/lstm.h"
#include "dynet/param-init.h"
#include "dynet/rnn.h"
#include "dynet/training.h"
#include "ext.h"

namespace dynet::py {
using namespace nb::literals;

std::unordered_map<std::string, nb::object>& custom_ops() {
  static std::unordered_map<std::string, nb::object> m;
  return m;
}

namespace {
using Array = nb::ndarray<nb::numpy, float>;

// The executor a renewed graph gets, as DyNet's renew_cg makes a new graph: autobatching None follows
// --dynet-autobatch / dynet_config's autobatch; True the autobatching executor (strategy 1 unless the
// flag says 2); False the simple one.
int strategy_for(nb::handle autobatching) {
  if (autobatching.is_none()) return std::max(autobatch_flag, 0);
  return nb::cast<bool>(autobatching) ? (autobatch_flag > 0 ? autobatch_flag : 1) : 0;
}

// A numpy copy of a tensor: dims as the shape in column-major (Fortran) order, the batch as a last axis
// when bd > 1 (DyNet's npvalue).
nb::object to_numpy(const Tensor& t, bool keep_batch_axis = false) {
  const Dim& d = t.d;
  std::vector<size_t> shape;
  for (unsigned k = 0; k < d.nd; ++k) shape.push_back(d[k]);
  if (d.bd > 1 || keep_batch_axis) shape.push_back(d.bd);
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    strides[k] = s;
    s *= static_cast<int64_t>(shape[k]);
  }
  const size_t n = d.size();
  float* data = new float[n ? n : 1];
  if (n) std::memcpy(data, t.v, n * sizeof(float));
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  return nb::cast(Array(data, shape.size(), shape.data(), owner, strides.data()));
}

// Column-major floats and the dims of a numpy-like array (copy; any dtype numpy can cast to float32).
std::pair<std::vector<unsigned>, std::vector<float>> from_array(nb::handle arr) {
  nb::object np = nb::module_::import_("numpy");
  nb::object a = np.attr("asarray")(arr, "dtype"_a = np.attr("float32"));
  nb::tuple shape = nb::tuple(a.attr("shape"));
  std::vector<unsigned> dims;
  for (nb::handle h : shape) dims.push_back(nb::cast<unsigned>(h));
  nb::object flat = np.attr("ravel")(a, "order"_a = "F");
  nb::object bytes = flat.attr("tobytes")();
  std::vector<float> v(nb::len(flat));
  if (!v.empty()) std::memcpy(v.data(), PyBytes_AsString(bytes.ptr()), v.size() * sizeof(float));
  return {dims, v};
}

Dim make_dim(const std::vector<unsigned>& dims, unsigned bd) {
  if (dims.size() > DYNET_MAX_TENSOR_DIM)
    throw std::invalid_argument("inputTensor: at most " + std::to_string(DYNET_MAX_TENSOR_DIM) + " dims (plus the batch)");
  Dim d;
  d.nd = static_cast<unsigned>(dims.size());
  for (unsigned k = 0; k < d.nd; ++k) d.d[k] = dims[k];
  if (d.nd == 0) {
    d.nd = 1;
    d.d[0] = 1;
  }
  d.bd = bd;
  return d;
}

Expression expr_of(nb::handle h) {
  Expression e;
  if (!to_expr(h.ptr(), e)) {
    if (PyErr_Occurred()) throw nb::python_error();
    throw nb::type_error("expected an Expression");
  }
  return e;
}

const Tensor& value_of(const Expression& e, bool recalculate) {
  if (e.is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
  if (recalculate) return e.pg->forward(e);
  return e.pg->incremental_forward(e);
}

// An updatable input (vecInput, inputVector, inputTensor, scalarInput): values the graph reads at each
// forward; .set() writes them and invalidates the graph.
PyObject* updatable_input(const Dim& d, std::vector<float> values) {
  auto storage = std::make_shared<std::vector<float>>(std::move(values));
  ComputationGraph& g = current_graph();
  Expression e = input(g, d, storage.get());
  keep_alive_for_graph(g, storage);
  PyObject* o = wrap(e);
  if (!o) throw nb::python_error();
  reinterpret_cast<PyExpr*>(o)->storage = new std::shared_ptr<void>(storage);
  reinterpret_cast<PyExpr*>(o)->kind = 2;
  return o;
}

// ---- Parameters ----
struct PyParameters {
  Parameter p;
  Expression cached;  // this parameter's node in the current graph (DyNet 2.1 adds it on first use)
  Expression expr(bool update) {
    ComputationGraph& g = current_graph();
    if (update && !cached.is_stale() && cached.pg == &g) return cached;
    Expression e = update ? parameter(g, p) : const_parameter(g, p);
    if (update) cached = e;
    return e;
  }
};
struct PyLookupParameters {
  LookupParameter p;
  Expression cached;
  Expression expr(bool update) {
    ComputationGraph& g = current_graph();
    if (update && !cached.is_stale() && cached.pg == &g) return cached;
    Expression e = update ? parameter(g, p) : const_parameter(g, p);
    if (update) cached = e;
    return e;
  }
};

struct PyInit {
  std::shared_ptr<ParameterInit> init;
  nb::object array;  // NumpyInitializer
};

std::vector<unsigned> dims_of(nb::handle dim) {
  if (PyLong_Check(dim.ptr())) return {nb::cast<unsigned>(dim)};
  return nb::cast<std::vector<unsigned>>(dim);
}

// RNN state pointer: (builder, state index); RNNState objects are Python (dynet/__init__.py).
using Builder = RNNBuilder;

}  // namespace

bool param_to_expr(PyObject* o, Expression& out) {
  try {
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
  method("value", [](const Expression& e, bool recalculate) -> nb::object {
    const Tensor& t = value_of(e, recalculate);
    if (t.d.size() == 1) return nb::float_(t.v[0]);
    if (t.d.bd == 1 && t.d.nd == 1) return nb::cast(std::vector<float>(t.v, t.v + t.d.size()));
    return to_numpy(t);
  }, "recalculate"_a = false);
  method("npvalue", [](const Expression& e, bool recalculate) { return to_numpy(value_of(e, recalculate)); },
         "recalculate"_a = false);
  method("scalar_value", [](const Expression& e, bool recalculate) {
    const Tensor& t = value_of(e, recalculate);
    if (t.d.size() != 1) throw std::invalid_argument("scalar_value: the expression has dim " + t.d.str() + ", not a scalar");
    return t.v[0];
  }, "recalculate"_a = false);
  method("vec_value", [](const Expression& e, bool recalculate) {
    const Tensor& t = value_of(e, recalculate);
    return std::vector<float>(t.v, t.v + t.d.size());
  }, "recalculate"_a = false);
  method("tensor_value", [](const Expression& e, bool recalculate) { return to_numpy(value_of(e, recalculate)); },
         "recalculate"_a = false);
  method("forward", [](const Expression& e, bool recalculate) { value_of(e, recalculate); }, "recalculate"_a = false);
  method("gradient", [](const Expression& e) {
    if (e.is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
    return to_numpy(e.gradient());
  });
  method("backward", [](const Expression& e, bool full) {
    if (e.is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
    e.pg->incremental_forward(e);
    e.pg->backward(e, full);
  }, "full"_a = false);
  method("dim", [](const Expression& e) {
    if (e.is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
    const Dim& d = e.dim();
    std::vector<unsigned> dims(d.d, d.d + d.nd);
    return std::make_pair(nb::tuple(nb::cast(dims)), d.bd);
  });
  method("__repr__", [](const Expression& e) {
    if (e.is_stale()) return std::string("expression (stale)");
    return "expression " + std::to_string(e.i) + "/" + std::to_string(e.graph_id) + " " + e.dim().str();
  });
  method("set", [](nb::handle self, nb::handle values) {
    PyExpr* p = reinterpret_cast<PyExpr*>(self.ptr());
    if (!PyObject_TypeCheck(self.ptr(), ExprType) || p->kind != 2 || !p->storage)
      throw std::invalid_argument("set: this expression is not an updatable input (vecInput, inputVector, inputTensor, scalarInput)");
    auto* v = static_cast<std::vector<float>*>(p->storage->get());
    std::vector<float> nv;
    if (PyFloat_Check(values.ptr()) || PyLong_Check(values.ptr())) nv = {nb::cast<float>(values)};
    else nv = from_array(values).second;
    if (nv.size() != v->size())
      throw std::invalid_argument("set: expected " + std::to_string(v->size()) + " values, got " + std::to_string(nv.size()));
    *v = nv;
    if (!p->e.is_stale()) p->e.pg->invalidate();
  });
  // DLPack: the value as a CPU tensor (a copy, as npvalue()).
  method("__dlpack__", [](const Expression& e, nb::kwargs) { return to_numpy(value_of(e, false)).attr("__dlpack__")(); });
  method("__dlpack_device__", [](const Expression&) { return std::make_pair(1, 0); });  // kDLCPU, device 0
  method("__getitem__", [](const Expression& e, nb::handle key) -> Expression {
    if (e.is_stale()) throw std::runtime_error("Attempt to use a stale expression.");
    if (PyLong_Check(key.ptr())) {
      long long i = nb::cast<long long>(key);
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
      PySlice_AdjustIndices(k < d.nd ? d[k] : 1, &start, &stop, step);
      if (step <= 0) throw std::invalid_argument("Expression slices need a positive step");
      strides.push_back(static_cast<int>(step));
      from.push_back(static_cast<int>(start));
      to.push_back(static_cast<int>(stop));
    }
    return strided_select(x, strides, from, to);
  });

  // ---- graphs ----
  struct PyGraph {
    std::unique_ptr<ComputationGraph> owned;
    ComputationGraph* g;
  };
  nb::class_<PyGraph>(m, "ComputationGraph",
                      "A computation graph. dy.cg() is the global one; `with dy.ComputationGraph():` builds "
                      "into a new graph in this thread (one graph per thread for data parallelism).")
      .def("__init__", [](PyGraph* self) { new (self) PyGraph{std::make_unique<ComputationGraph>(), nullptr}; self->g = self->owned.get(); })
      .def("__enter__", [](PyGraph& self) { push_graph(self.g); return &self; }, nb::rv_policy::reference)
      .def("__exit__", [](PyGraph& self, nb::args) { pop_graph(self.g); })
      .def("renew", [](PyGraph& self, bool immediate_compute, bool check_validity, nb::object autobatching) {
        release_graph_storage(*self.g);
        self.g->renew(strategy_for(autobatching));
        self.g->set_immediate_compute(immediate_compute);
        self.g->set_check_validity(check_validity);
        if (self.g == &global_graph()) ++global_graph_version();
      }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none())
      .def("version", [](PyGraph& self) { return self.g == &global_graph() ? global_graph_version() : self.g->get_id(); })
      .def("checkpoint", [](PyGraph& self) { self.g->checkpoint(); })
      .def("revert", [](PyGraph& self) { self.g->revert(); })
      .def("print_graphviz", [](PyGraph& self) { self.g->print_graphviz(); })
      .def("dump", [](PyGraph& self, const std::string& f, bool v, bool gr, bool n) { self.g->dump(f, v, gr, n); },
           "filename"_a, "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false)
      .def("size", [](PyGraph& self) { return self.g->size(); });
  // The global graph's wrapper lives as long as the module (a module attribute; no C++ static owns it,
  // so nothing is released after the interpreter has gone).
  nb::object global_wrapper_obj = nb::inst_alloc(nb::type<PyGraph>());
  new (nb::inst_ptr<PyGraph>(global_wrapper_obj)) PyGraph{nullptr, &global_graph()};
  nb::inst_mark_ready(global_wrapper_obj);
  m.attr("_global_cg") = global_wrapper_obj;
  nb::handle global_wrapper = global_wrapper_obj;
  m.def("renew_cg", [global_wrapper](bool immediate_compute, bool check_validity, nb::object autobatching) {
    ComputationGraph& g = current_graph();
    release_graph_storage(g);
    g.renew(strategy_for(autobatching));
    g.set_immediate_compute(immediate_compute);
    g.set_check_validity(check_validity);
    if (&g == &global_graph()) ++global_graph_version();
    return nb::borrow(global_wrapper);
  }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none());
  m.def("cg", [global_wrapper] { return nb::borrow(global_wrapper); });
  m.def("cg_version", [] { return global_graph_version(); });
  m.def("cg_checkpoint", [] { current_graph().checkpoint(); });
  m.def("cg_revert", [] { current_graph().revert(); });
  m.def("print_text_graphviz", [] { current_graph().print_graphviz(); });
  m.def("dump_cg", [](const std::string& f, bool v, bool g, bool n) { current_graph().dump(f, v, g, n); },
        "filename"_a = "", "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false);
  m.def("forward", [](nb::sequence exps, bool recalculate) {
    Expression last;
    for (nb::handle h : exps) {
      Expression e = expr_of(h);
      if (last.pg == nullptr || e.i > last.i) last = e;
    }
    if (last.pg) value_of(last, recalculate);
  }, "exps"_a, "recalculate"_a = false);

  // ---- initializers ----
  nb::class_<PyInit>(m, "PyInitializer", nb::dynamic_attr());
  m.def("_init_normal", [](float mean, float var) { return PyInit{std::make_shared<ParameterInitNormal>(mean, var), {}}; });
  m.def("_init_uniform", [](float scale) { return PyInit{std::make_shared<ParameterInitUniform>(scale), {}}; });
  m.def("_init_const", [](float c) { return PyInit{std::make_shared<ParameterInitConst>(c), {}}; });
  m.def("_init_identity", [] { return PyInit{std::make_shared<ParameterInitIdentity>(), {}}; });
  m.def("_init_glorot", [](bool is_lookup, float gain) { return PyInit{std::make_shared<ParameterInitGlorot>(is_lookup, gain), {}}; });
  m.def("_init_fromfile", [](std::string f) { return PyInit{std::make_shared<ParameterInitFromFile>(f), {}}; });
  m.def("_init_vector", [](nb::handle arr) {
    auto [dims, v] = from_array(arr);
    return PyInit{std::make_shared<ParameterInitFromVector>(v), nb::borrow(arr)};
  });

  // ---- Parameters ----
  nb::class_<PyParameters>(m, "Parameters")
      .def("expr", [](PyParameters& p, bool update) { return p.expr(update); }, "update"_a = false)
      .def("shape", [](PyParameters& p) { Dim d = p.p.dim(); return nb::tuple(nb::cast(std::vector<unsigned>(d.d, d.d + d.nd))); })
      .def("as_array", [](PyParameters& p) { return to_numpy(*p.p.values()); })
      .def("grad_as_array", [](PyParameters& p) { return to_numpy(*p.p.gradients()); })
      .def("set_value", [](PyParameters& p, nb::handle arr) {
        auto [dims, v] = from_array(arr);
        if (v.size() != p.p.dim().size())
          throw std::invalid_argument("set_value: " + std::to_string(v.size()) + " values for a parameter of dim " + p.p.dim().str());
        p.p.set_value(v);
      }, "arr"_a)
      .def("clip_inplace", [](PyParameters& p, float l, float r) { p.p.clip_inplace(l, r); }, "left"_a, "right"_a)
      .def("zero", [](PyParameters& p) { p.p.zero(); })
      .def("scale", [](PyParameters& p, float s) { p.p.scale(s); }, "s"_a)
      .def("scale_gradient", [](PyParameters& p, float s) { p.p.scale_gradient(s); }, "s"_a)
      .def("is_updated", [](PyParameters& p) { return p.p.is_updated(); })
      .def("set_updated", [](PyParameters& p, bool b) { p.p.set_updated(b); }, "b"_a)
      .def("name", [](PyParameters& p) { return p.p.get_fullname(); })
      .def("save", [](PyParameters& p, const std::string& f, const std::string& key, bool append) {
        TextFileSaver(f, append).save(p.p, key);
      }, "fname"_a, "key"_a = "", "append"_a = false)
      .def("populate", [](PyParameters& p, const std::string& f, const std::string& key) { TextFileLoader(f).populate(p.p, key); },
           "fname"_a, "key"_a = "");
  nb::class_<PyLookupParameters>(m, "LookupParameters")
      .def("expr", [](PyLookupParameters& p, bool update) { return p.expr(update); }, "update"_a = true)
      .def("shape", [](PyLookupParameters& p) {
        Dim d = p.p.dim();
        std::vector<unsigned> s{static_cast<unsigned>(p.p.get_storage().values.size())};
        for (unsigned k = 0; k < d.nd; ++k) s.push_back(d[k]);
        return nb::tuple(nb::cast(s));
      })
      .def("__len__", [](PyLookupParameters& p) { return p.p.get_storage().values.size(); })
      .def("__getitem__", [](PyLookupParameters& p, unsigned i) { return lookup(current_graph(), p.p, i); })
      .def("batch", [](PyLookupParameters& p, std::vector<unsigned> ids) { return lookup(current_graph(), p.p, ids); }, "i"_a)
      .def("init_row", [](PyLookupParameters& p, unsigned i, nb::handle row) { p.p.initialize(i, from_array(row).second); }, "i"_a, "row"_a)
      .def("init_from_array", [](PyLookupParameters& p, nb::handle arr) {
        auto [dims, v] = from_array(arr);
        auto& st = p.p.get_storage();
        if (dims.empty() || dims[0] != st.values.size() || v.size() != st.all_dim.size())
          throw std::invalid_argument("init_from_array: the array must have one row per entry (" +
                                      std::to_string(st.values.size()) + " rows of " + st.dim.str() + ")");
        const size_t n = dims[0], rs = st.dim.size();
        for (size_t r = 0; r < n; ++r) {  // v is column-major over (rows, dims...): row r is strided
          std::vector<float> row(rs);
          for (size_t k = 0; k < rs; ++k) row[k] = v[r + k * n];
          p.p.initialize(static_cast<unsigned>(r), row);
        }
      }, "arr"_a)
      .def("as_array", [](PyLookupParameters& p) {
        auto& st = p.p.get_storage();
        nb::list rows;
        for (auto& t : st.values) rows.append(to_numpy(t));
        return nb::module_::import_("numpy").attr("array")(rows);
      })
      .def("row_as_array", [](PyLookupParameters& p, unsigned r) {
        auto& st = p.p.get_storage();
        if (r >= st.values.size()) throw nb::index_error("row out of range");
        return to_numpy(st.values[r]);
      }, "row"_a)
      .def("grad_as_array", [](PyLookupParameters& p) {
        auto& st = p.p.get_storage();
        nb::list rows;
        for (auto& t : st.grads) rows.append(to_numpy(t));
        return nb::module_::import_("numpy").attr("array")(rows);
      })
      .def("row_grad_as_array", [](PyLookupParameters& p, unsigned r) {
        auto& st = p.p.get_storage();
        if (r >= st.grads.size()) throw nb::index_error("row out of range");
        return to_numpy(st.grads[r]);
      }, "row"_a)
      .def("rows_as_array", [](PyLookupParameters& p, std::vector<unsigned> rows) {
        auto& st = p.p.get_storage();
        nb::list out;
        for (unsigned r : rows) {
          if (r >= st.values.size()) throw nb::index_error("row out of range");
          out.append(to_numpy(st.values[r]));
        }
        return nb::module_::import_("numpy").attr("array")(out);
      }, "rows"_a)
      .def("rows_grad_as_array", [](PyLookupParameters& p, std::vector<unsigned> rows) {
        auto& st = p.p.get_storage();
        nb::list out;
        for (unsigned r : rows) {
          if (r >= st.grads.size()) throw nb::index_error("row out of range");
          out.append(to_numpy(st.grads[r]));
        }
        return nb::module_::import_("numpy").attr("array")(out);
      }, "rows"_a)
      .def("zero", [](PyLookupParameters& p) { p.p.zero(); })
      .def("scale", [](PyLookupParameters& p, float s) { p.p.scale(s); }, "s"_a)
      .def("scale_gradient", [](PyLookupParameters& p, float s) { p.p.scale_gradient(s); }, "s"_a)
      .def("is_updated", [](PyLookupParameters& p) { return p.p.is_updated(); })
      .def("set_updated", [](PyLookupParameters& p, bool b) { p.p.set_updated(b); }, "b"_a)
      .def("name", [](PyLookupParameters& p) { return p.p.get_fullname(); })
      .def("save", [](PyLookupParameters& p, const std::string& f, const std::string& key, bool append) {
        TextFileSaver(f, append).save(p.p, key);
      }, "fname"_a, "key"_a = "", "append"_a = false)
      .def("populate", [](PyLookupParameters& p, const std::string& f, const std::string& key) { TextFileLoader(f).populate(p.p, key); },
           "fname"_a, "key"_a = "");

  // ---- ParameterCollection ----
  auto init_of = [](nb::handle init) -> PyInit* {
    if (init.is_none()) return nullptr;
    if (!nb::isinstance<PyInit>(init)) throw nb::type_error("init must be an initializer (dy.*Initializer) or a numpy array");
    return nb::inst_ptr<PyInit>(init);
  };
  auto is_array = [](nb::handle o) { return nb::hasattr(o, "shape") && nb::hasattr(o, "dtype"); };
  auto from_numpy = [](ParameterCollection& pc, nb::handle array, const std::string& name) {
    auto [dims, v] = from_array(array);
    return PyParameters{pc.add_parameters(make_dim(dims, 1), ParameterInitFromVector(v), name), {}};
  };
  auto lookup_from_numpy = [](ParameterCollection& pc, nb::handle array, const std::string& name) {
    auto [dims, v] = from_array(array);
    if (dims.size() < 2) throw std::invalid_argument("lookup_parameters_from_numpy: the array needs a row per entry (n, d...)");
    const unsigned n = dims[0];
    LookupParameter lp = pc.add_lookup_parameters(n, make_dim(std::vector<unsigned>(dims.begin() + 1, dims.end()), 1), name);
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
                                 nb::handle, float, float, float) {
        if (is_array(init)) return from_numpy(pc, init, name);
        const Dim d = make_dim(dims_of(dim), 1);
        if (PyFloat_Check(init.ptr()) || PyLong_Check(init.ptr()))
          return PyParameters{pc.add_parameters(d, ParameterInitConst(nb::cast<float>(init)), name), {}};
        PyInit* in = init_of(init);
        return PyParameters{in ? pc.add_parameters(d, *in->init, name) : pc.add_parameters(d, 0.f, name), {}};
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1.f, "mean"_a = 0.f, "std"_a = 1.f)
      .def("add_lookup_parameters", [=](ParameterCollection& pc, nb::handle dim, nb::handle init, const std::string& name,
                                        nb::handle, float, float, float) {
        if (is_array(init)) return lookup_from_numpy(pc, init, name);
        if (nb::hasattr(init, "_from_numpy"))
          throw std::invalid_argument("Do not use NumpyInitializer with add_lookup_parameters, use "
                                      "lookup_parameters_from_numpy instead");
        std::vector<unsigned> dims = dims_of(dim);
        if (dims.size() < 2) throw std::invalid_argument("add_lookup_parameters: dim must be (n, d...)");
        const Dim d = make_dim(std::vector<unsigned>(dims.begin() + 1, dims.end()), 1);
        PyInit* in = init_of(init);
        return PyLookupParameters{in ? pc.add_lookup_parameters(dims[0], d, *in->init, name)
                                     : pc.add_lookup_parameters(dims[0], d, name), {}};
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1.f, "mean"_a = 0.f, "std"_a = 1.f)
      .def("parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle) {
        return from_numpy(pc, a, name);
      }, "array"_a, "name"_a = "", "device"_a = "")
      .def("lookup_parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle) {
        return lookup_from_numpy(pc, a, name);
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
      .def("save", [](ParameterCollection& pc, const std::string& f, const std::string& key, bool append) {
        TextFileSaver(f, append).save(pc, key);
      }, "fname"_a, "name"_a = "", "append"_a = false)
      .def("write_to_textfile", [](ParameterCollection& pc, const std::string& f, const std::string& key, bool append) {
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

  // ---- trainers ----
  nb::class_<Trainer>(m, "Trainer")
      .def("update", [](Trainer& t) { t.update(); })
      .def("update_subset", [](Trainer& t, std::vector<unsigned> p, std::vector<unsigned> l) { t.update(p, l); },
           "updated_params"_a, "updated_lookups"_a)
      .def("update_epoch", [](Trainer& t, float r) { t.update_epoch(r); }, "r"_a = 1.f)
      .def("restart", [](Trainer& t, std::optional<float> lr) { if (lr) t.restart(*lr); else t.restart(); },
           "learning_rate"_a = nb::none())
      .def("status", [](Trainer& t) { t.status(); })
      .def("set_sparse_updates", [](Trainer& t, bool b) { t.sparse_updates_enabled = b; }, "su"_a)
      .def("set_clip_threshold", [](Trainer& t, float thr) {
        if (thr <= 0) { t.clipping_enabled = false; t.clip_threshold = 0; }
        else { t.clipping_enabled = true; t.clip_threshold = thr; }
      }, "thr"_a)
      .def("get_clip_threshold", [](Trainer& t) { return t.clip_threshold; })
      .def_prop_rw("learning_rate", [](Trainer& t) { return t.learning_rate; }, [](Trainer& t, float v) { t.learning_rate = v; })
      .def("set_learning_rate", [](Trainer& t, float v) { t.learning_rate = v; }, "value"_a);
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
      .def("_new_graph", [](RNNBuilder& b, bool update) { b.new_graph(current_graph(), update); })
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
      .def("disable_dropout", [](RNNBuilder& b) { b.disable_dropout(); });
  nb::class_<SimpleRNNBuilder, RNNBuilder>(m, "SimpleRNNBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, bool>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "support_lags"_a = false, nb::keep_alive<1, 5>());
  nb::class_<VanillaLSTMBuilder, RNNBuilder>(m, "VanillaLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, bool, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.f, nb::keep_alive<1, 5>())
      .def("set_dropouts", [](VanillaLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a)
      .def("set_dropout_masks", [](VanillaLSTMBuilder& b, unsigned bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1);
  nb::class_<CoupledLSTMBuilder, RNNBuilder>(m, "CoupledLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());
  nb::class_<CompactVanillaLSTMBuilder, RNNBuilder>(m, "CompactVanillaLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());
  nb::class_<SparseLSTMBuilder, RNNBuilder>(m, "SparseLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&, bool, float>(), "layers"_a, "input_dim"_a,
           "hidden_dim"_a, "model"_a, "ln_lstm"_a = false, "forget_bias"_a = 1.f, nb::keep_alive<1, 5>())
      .def("set_sparsity", [](SparseLSTMBuilder& b, float s) { b.set_sparsity(s); }, "sparsity"_a)
      .def("set_dropouts", [](SparseLSTMBuilder& b, float d, float dr) { b.set_dropout(d, dr); }, "d"_a, "d_r"_a)
      .def("set_dropout_masks", [](SparseLSTMBuilder& b, unsigned bs) { b.set_dropout_masks(bs); }, "batch_size"_a = 1);
  nb::class_<FastLSTMBuilder, RNNBuilder>(m, "FastLSTMBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());

  // ---- softmax builders (the graph's parameters are added on each call, as DyNet's Python does) ----
  nb::class_<SoftmaxBuilder>(m, "SoftmaxBuilder")
      .def("neg_log_softmax", [](SoftmaxBuilder& b, const Expression& x, unsigned c, bool update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true)
      .def("neg_log_softmax_batch", [](SoftmaxBuilder& b, const Expression& x, std::vector<unsigned> c, bool update) {
        b.new_graph(current_graph(), update);
        return b.neg_log_softmax(x, c);
      }, "x"_a, "c"_a, "update"_a = true)
      .def("sample", [](SoftmaxBuilder& b, const Expression& x) {
        b.new_graph(current_graph(), true);
        return b.sample(x);
      }, "x"_a)
      .def("full_log_distribution", [](SoftmaxBuilder& b, const Expression& x, bool update) {
        b.new_graph(current_graph(), update);
        return b.full_log_distribution(x);
      }, "x"_a, "update"_a = true)
      .def("full_logits", [](SoftmaxBuilder& b, const Expression& x, bool update) {
        b.new_graph(current_graph(), update);
        return b.full_logits(x);
      }, "x"_a, "update"_a = true)
      .def("param_collection", [](SoftmaxBuilder& b) { return b.get_parameter_collection(); });
  nb::class_<StandardSoftmaxBuilder, SoftmaxBuilder>(m, "StandardSoftmaxBuilder")
      .def(nb::init<unsigned, unsigned, ParameterCollection&, bool>(), "input_dim"_a, "num_classes"_a, "pc"_a,
           "bias"_a = true, nb::keep_alive<1, 4>());
  nb::class_<GRUBuilder, RNNBuilder>(m, "GRUBuilder")
      .def(nb::init<unsigned, unsigned, unsigned, ParameterCollection&>(), "layers"_a, "input_dim"_a, "hidden_dim"_a,
           "model"_a, nb::keep_alive<1, 5>());

  // ---- configuration ----
  m.def("_initialize", [](std::vector<std::string> argv, unsigned seed, std::string mem, float wd, int autobatch, int profiling) {
    // dynet::initialize's settings without its banner (the Python module prints nothing unless asked).
    // Pools grow on demand, so --dynet-mem is accepted and not needed.
    (void)argv;
    (void)mem;
    if (wd < 0.f || wd >= 1.f) throw std::invalid_argument("weight_decay must be in [0, 1)");
    autobatch_flag = autobatch;
    profiling_flag = profiling;
    // The global graph was made when the module loaded, before the flags: it takes their executor now.
    if (global_graph().size() == 0) global_graph().renew(std::max(autobatch, 0));
    default_weight_decay_lambda = wd;
    reset_rng(seed);
  });
  m.def("reset_random_seed", [](unsigned seed) { reset_rng(seed); }, "seed"_a);

  // ---- custom op bindings ("@name" entries): numpy arrays and updatable inputs ----
  auto custom = [&](const char* name, auto&& f, auto... args) {
    custom_ops()[name] = nb::cpp_function(std::forward<decltype(f)>(f), nb::name(name), args...);
  };
  custom("inputTensor", [](nb::handle arr, bool batched, nb::object device, bool reusable_expr) {
    auto [dims, v] = from_array(arr);
    unsigned bd = 1;
    if (batched) {
      if (dims.empty()) throw std::invalid_argument("inputTensor: a batched tensor needs a batch axis (the last one)");
      bd = dims.back();
      dims.pop_back();
    }
    const Dim d = make_dim(dims, bd);
    return nb::steal(updatable_input(d, std::move(v)));
  }, "arr"_a, "batched"_a = false, "device"_a = "", "reusable_expr"_a = false);
  custom("inputVector", [](nb::handle v, nb::object) {
    auto [dims, vals] = from_array(v);
    const Dim d({static_cast<unsigned>(vals.size())});  // before vals is moved from
    return nb::steal(updatable_input(d, std::move(vals)));
  }, "v"_a, "device"_a = "");
  custom("vecInput", [](unsigned dim, nb::object) {
    return nb::steal(updatable_input(Dim({dim}), std::vector<float>(dim, 0.f)));
  }, "dim"_a, "device"_a = "");
  custom("scalarInput", [](float s, nb::object) { return nb::steal(updatable_input(Dim({1}), {s})); }, "s"_a,
         "device"_a = "");
  custom("matInput", [](unsigned d1, unsigned d2) {
    return nb::steal(updatable_input(Dim({d1, d2}), std::vector<float>(size_t(d1) * d2, 0.f)));
  }, "d1"_a, "d2"_a);
  custom("inputMatrix", [](std::vector<float> v, std::vector<unsigned> d) {
    if (d.size() != 2) throw std::invalid_argument("inputMatrix: d must be (rows, cols)");
    const Dim dim = make_dim(d, 1);
    return nb::steal(updatable_input(dim, std::move(v)));
  }, "v"_a, "d"_a);
  custom("sparse_inputTensor", [](std::vector<std::vector<unsigned>> idxs, std::vector<float> values,
                                  std::vector<unsigned> shape, bool batched, float defval, nb::object) {
    unsigned bd = 1;
    if (batched) {
      bd = shape.back();
      shape.pop_back();
    }
    Dim d = make_dim(shape, bd);
    std::vector<unsigned> flat;
    if (idxs.empty()) throw std::invalid_argument("sparse_inputTensor: idxs must give one index list per axis");
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
    return input(current_graph(), d, flat, values, defval);
  }, "idxs"_a, "values"_a, "shape"_a, "batched"_a = false, "defval"_a = 0.f, "device"_a = "");
}

}  // namespace dynet::py

NB_MODULE(_dynet, m) {
  using namespace dynet::py;
  init_expression(m);
  init_module(m);
  init_ops(m);
  custom_ops().clear();  // the op objects hold them now; no C++ static may outlive the interpreter
}
