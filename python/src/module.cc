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
#include "core/executor.h"
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

// Computes node i of g (from scratch, or only what is not computed yet) with the GIL released, then returns
// read(value), called under the GIL with the graph still held (ComputeScope).
template <class Read>
auto read_node(ComputationGraph& g, VariableIndex i, bool from_scratch, Read&& read) {
  wait_until_idle_fast(&g);
  if (!from_scratch && g.executor().computed(i)) return read(g.incremental_forward(i));  // nothing to compute
  ComputeScope scope(&g);
  const Tensor& t = from_scratch ? g.forward(i) : g.incremental_forward(i);
  scope.reacquire();
  return read(t);
}
// Backpropagates from node i of g (the graph computes what it needs first) with the GIL released.
void backward_from(ComputationGraph& g, VariableIndex i, bool full) {
  ComputeScope scope(&g);
  g.backward(i, full);
}
template <class Read>
auto read_value(const Expression& e, bool recalculate, Read&& read) {
  check_live(e);
  return read_node(*e.pg, e.i, recalculate, std::forward<Read>(read));
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
  wait_until_idle_fast(p->e.pg);  // forward reads what .set() writes
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
      *static_cast<unsigned*>(p->slot) = static_cast<unsigned>(int_or_float_in_range(value, 0, 0xffffffffLL, "set"));
      break;
    }
    case Settable::Indices: {
      auto& v = *static_cast<std::vector<unsigned>*>(p->slot);
      if (PyUnicode_Check(value.ptr()) || !PySequence_Check(value.ptr()))
        throw nb::type_error("set: the indices must be a sequence of ints");
      std::vector<unsigned> nv;
      for (nb::handle x : nb::borrow<nb::sequence>(value))
        nv.push_back(static_cast<unsigned>(int_or_float_in_range(x, 0, 0xffffffffLL, "set")));
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
  const long long i = int_or_float_in_range(index, LLONG_MIN, LLONG_MAX, "node index");
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

// The methods Parameters and LookupParameters share, with the same behaviour and text.
template <class P>
void def_shared_parameter_methods(nb::class_<P>& c) {
  c
      .def("zero", [](P& p) { p.p.zero(); },
           "Sets every value to 0.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("scale", [](P& p, float s) { p.p.scale(s); }, "s"_a,
           "Multiplies the values by a factor.\n"
           "\n"
           "Args:\n"
           "    s (float): The factor.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("scale_gradient", [](P& p, float s) { p.p.scale_gradient(s); }, "s"_a,
           "Multiplies the accumulated gradient by a factor.\n"
           "\n"
           "Args:\n"
           "    s (float): The factor.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("is_updated", [](P& p) { return p.p.is_updated(); },
           "Whether trainers update this parameter.\n"
           "\n"
           "Returns:\n"
           "    bool: True unless set_updated(False) was called.")
      .def("set_updated", [](P& p, truthy b) { p.p.set_updated(b); }, "b"_a,
           "Whether trainers update this parameter (False freezes it).\n"
           "\n"
           "Args:\n"
           "    b (bool): True to train it, False to freeze it.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("name", [](P& p) { return p.p.get_fullname(); },
           "The full name (e.g. '/W', or '/birnn/_0' in a subcollection).\n"
           "\n"
           "Returns:\n"
           "    str: the name.")
      .def("save", &save_param<P>, "fname"_a, "key"_a = "", "append"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "Appends (or writes) the values to a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.\n"
           "    append (bool): Add to the file instead of replacing it. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("write_to_textfile", &save_param<P>, "fname"_a, "key"_a = "", "append"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "Appends (or writes) the values to a DyNet text model file (same as save).\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.\n"
           "    append (bool): Add to the file instead of replacing it. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("populate", &populate_param<P>, "fname"_a, "key"_a = "", nb::call_guard<nb::gil_scoped_release>(),
           "Reads the values from a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("populate_from_textfile", &populate_param<P>, "fname"_a, "key"_a = "", nb::call_guard<nb::gil_scoped_release>(),
           "Reads the values from a DyNet text model file (same as populate).\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    None");
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
  method("value", [](const Expression& e, truthy recalculate) {
    // DyNet's value(): a float for a one-element vector, a list for a vector (all batch elements in a row),
    // else npvalue() (a 1x1 matrix too)
    return read_value(e, recalculate, [](const Tensor& t) -> ValueResult {
      if (t.d.nd <= 1 && t.d.size() == 1) return {nb::float_(t.v[0])};
      if (t.d.nd == 1) return {nb::cast(std::vector<float>(t.v, t.v + t.d.size()))};
      return {to_numpy(t)};
    });
  }, "recalculate"_a = false,
           "The value: a float for a scalar, a list for a vector, else a numpy array (DyNet's value()).\n"
           "\n"
           "Computes the graph up to this node if needed.\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    float | list[float] | numpy.ndarray: a copy of the value.");
  method("npvalue", [](const Expression& e, truthy recalculate) {
    return read_value(e, recalculate, [](const Tensor& t) { return NDArrayF64{to_numpy(t)}; });
  },
         "recalculate"_a = false,
           "The value as a float64 numpy array (the batch, when there is one, is the last axis).\n"
           "\n"
           "Computes the graph up to this node if needed.\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a copy of the value.");
  method("scalar_value", [](const Expression& e, truthy recalculate) {
    return read_value(e, recalculate, [](const Tensor& t) {
      if (t.d.size() != 1) throw std::invalid_argument("scalar_value: the expression has dim " + t.d.str() + ", not a scalar");
      return t.v[0];
    });
  }, "recalculate"_a = false,
           "The value of a one-element expression as a float.\n"
           "\n"
           "Computes the graph up to this node if needed.\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    float: the value.\n"
           "\n"
           "Raises:\n"
           "    ValueError: when the expression has more than one element.");
  method("vec_value", [](const Expression& e, truthy recalculate) {
    return read_value(e, recalculate, [](const Tensor& t) { return std::vector<float>(t.v, t.v + t.d.size()); });
  }, "recalculate"_a = false,
           "The values as a flat list (column-major, batch elements last).\n"
           "\n"
           "Computes the graph up to this node if needed.\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    list[float]: a copy of the values.");
  method("tensor_value", [](const Expression& e, truthy recalculate) {
    return read_value(e, recalculate, [](const Tensor& t) { return TensorResult{tensor_of(t)}; });
  },
         "recalculate"_a = false,
           "The value as a dy.Tensor (which has argmax, topk and categorical_sample_log_prob).\n"
           "\n"
           "Computes the graph up to this node if needed.\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    Tensor: a copy of the value.");
  method("forward", [](const Expression& e, truthy recalculate) { read_value(e, recalculate, [](const Tensor&) {}); }, "recalculate"_a = false,
           "Computes the graph up to this node (the value is then cached).\n"
           "\n"
           "Args:\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None");
  method("gradient", [](const Expression& e) {
    check_live(e);
    wait_until_idle_fast(e.pg);  // not while a backward on another thread writes it
    return NDArrayF64{to_numpy(e.gradient())};
  },
           "The gradient of the last backward()'s loss with respect to this node.\n"
           "\n"
           "Valid after backward() on an expression that depends on this one.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy of the gradient.");
  method("backward", [](const Expression& e, truthy full) {
    check_live(e);
    backward_from(*e.pg, e.i, full);
  }, "full"_a = false,
           "Backpropagates from this (scalar) node: accumulates gradients into the parameters it depends on.\n"
           "\n"
           "Computes the value first if needed; then call a trainer's update().\n"
           "\n"
           "Args:\n"
           "    full (bool): Also compute the gradients of nodes that do not depend on parameters (for gradient()). Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None");
  method("dim", [](const Expression& e) {
    check_live(e);
    const Dim& d = e.dim();
    std::vector<unsigned> dims(d.d, d.d + d.nd);
    return std::make_pair(nb::tuple(nb::cast(dims)), d.bd);
  },
           "The dims of the expression and its batch size.\n"
           "\n"
           "Does not compute the value.\n"
           "\n"
           "Returns:\n"
           "    tuple[tuple[int, ...], int]: (dims, batch size).");
  // What the node is, without computing it: <Expression tanh {8} graph 3>.
  method("__repr__", [](const Expression& e) {
    if (e.is_stale()) return std::string("<Expression (stale)>");
    const char* op = op_def(e.pg->node(e.i).op).name;
    return std::string("<Expression ") + (op ? op : "?") + " " + e.dim().str() + " graph " + std::to_string(e.graph_id) + ">";
  });
  // numpy's array protocol: np.asarray(e) is e.npvalue() (a float64 copy), in the dtype asked for.
  // numpy's operators defer to the Expression's (np.float32(2) * e is an Expression, not an array of e's value).
  nb::setattr(E, "__array_ufunc__", nb::none());
  method("__array__", [](const Expression& e, nb::handle dtype, nb::handle copy) {
    if (!copy.is_none() && !PyObject_IsTrue(copy.ptr()))
      throw nb::value_error("Expression.__array__: the value is always a copy (copy=False cannot be honoured)");
    nb::object a = read_value(e, false, [](const Tensor& t) { return to_numpy(t); });
    return NDArrayF64{dtype.is_none() ? a : a.attr("astype")(dtype)};
  }, "dtype"_a = nb::none(), "copy"_a = nb::none());
  method("set", set_expression, "x"_a,
           "Gives an input, lookup or pick new values or indices; the graph is recomputed on the next forward.\n"
           "\n"
           "The number of values (or indices) must stay the same.\n"
           "\n"
           "Args:\n"
           "    x (float | list | numpy.ndarray): The new values (inputs) or indices (lookups, picks).\n"
           "\n"
           "Returns:\n"
           "    None");
  method("set_index", set_expression, "i"_a,
           "Gives a lookup or pick a new index (or one per batch element); the graph is recomputed on the next forward.\n"
           "\n"
           "Args:\n"
           "    i (int | list[int]): The new index, or indices.\n"
           "\n"
           "Returns:\n"
           "    None");
  // DLPack: the value as a CPU tensor (a copy, as npvalue()).
  method("__dlpack__", [](const Expression& e, nb::kwargs) {
    return read_value(e, false, [](const Tensor& t) { return to_numpy_float32(t); }).attr("__dlpack__")();
  });
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
    ~PyGraph() {
      if (owned_g) wait_until_idle_fast(g);  // a thread may still compute it through an expression
    }
    // The graph, once no other thread computes it: for what reads or changes it under the GIL.
    ComputationGraph& idle() const {
      wait_until_idle_fast(g);
      return *g;
    }
    void renew(bool immediate_compute, bool check_validity, nb::handle autobatching) {
      idle().renew(strategy_for(autobatching));
      in->clear();
      g->set_immediate_compute(immediate_compute);
      g->set_check_validity(check_validity);
      if (g == &global_graph()) ++global_graph_version();
    }
  };
  nb::class_<PyGraph>(m, "ComputationGraph",
                      "A computation graph.\n\n"
                      "dy.cg() is the global one; `with dy.ComputationGraph():` builds into a new graph in this "
                      "thread (one graph per thread for data parallelism).")
      .def("__repr__", [](PyGraph& self) {
        return "<ComputationGraph " + std::to_string(self.g->get_id()) + ": " + std::to_string(self.g->size()) + " nodes>";
      })
      .def("__init__", [](PyGraph* self) {
        new (self) PyGraph{std::make_unique<ComputationGraph>(), std::make_unique<GraphInputs>(), nullptr, nullptr};
        self->g = self->owned_g.get();
        self->in = self->owned_in.get();
      })
      .def("__enter__", [](PyGraph& self) { push_graph(self.g, self.in); return &self; }, nb::rv_policy::reference)
      .def("__exit__", [](PyGraph& self, nb::args) { pop_graph(self.g); })
      .def("renew", [](PyGraph& self, truthy immediate_compute, truthy check_validity, nb::object autobatching) {
        self.renew(immediate_compute, check_validity, autobatching);
      }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none(),
           "Clears the graph (its expressions become stale) and sets how it runs.\n"
           "\n"
           "Args:\n"
           "    immediate_compute (bool): Compute each node as soon as it is added (for debugging). Defaults to False.\n"
           "    check_validity (bool): Check each value for NaN and infinity as it is computed. Defaults to False.\n"
           "    autobatching (bool | None): Batch independent operations automatically; None: the --dynet-autobatch setting. Defaults to None.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("version", [](PyGraph& self) { return self.g == &global_graph() ? global_graph_version() : self.g->get_id(); },
           "A number that changes whenever the graph is renewed.\n"
           "\n"
           "Returns:\n"
           "    int: the graph's version.")
      .def("checkpoint", [](PyGraph& self) { self.idle().checkpoint(); },
           "Remembers the graph's current size; revert() removes the nodes added after it.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("revert", [](PyGraph& self) { self.idle().revert(); },
           "Removes the nodes added since the last checkpoint().\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("print_graphviz", [](PyGraph& self) { write_stdout(graphviz_text(self.idle())); },
           "Prints the graph in graphviz's dot format on sys.stdout (graphviz() returns the text).\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("dump", [](PyGraph& self, const std::string& f, truthy v, truthy gr, truthy n) { dump_graph(self.idle(), f, v, gr, n); },
           "filename"_a, "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false,
           "Writes the graph's nodes (ops, dims, and optionally values and gradients) to a text file.\n"
           "\n"
           "Args:\n"
           "    filename (str): The file ('' : sys.stderr).\n"
           "    show_values (bool): Include the values. Defaults to True.\n"
           "    show_gradients (bool): Include the gradients. Defaults to True.\n"
           "    nan_check_only (bool): Only say whether each value has a NaN. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("graphviz", [](PyGraph& self) { return graphviz_text(self.idle()); },
           "The graph in graphviz dot format (what print_graphviz() writes to sys.stdout).\n\nReturns:\n    str: one node per line, labelled like \"N1 = parameter(/W) {8,2}\", then the edges.")
      .def("size", [](PyGraph& self) { return self.g->size(); },
           "The number of nodes in the graph.\n"
           "\n"
           "Returns:\n"
           "    int: the node count.")
      // DyNet's lower-level graph methods: `index` is an expression (or its node index in this graph).
      .def("forward", [](PyGraph& self, nb::handle index) { read_node(*self.g, node_of(*self.g, index), true, [](const Tensor&) {}); }, "index"_a,
           "Computes the graph from scratch up to a node.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("inc_forward", [](PyGraph& self, nb::handle index) { read_node(*self.g, node_of(*self.g, index), false, [](const Tensor&) {}); }, "index"_a,
           "Computes the nodes not yet computed, up to a node.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("forward_scalar", [](PyGraph& self, nb::handle index) {
        return read_node(*self.g, node_of(*self.g, index), true, [](const Tensor& t) { return as_scalar(t); });
      }, "index"_a,
           "Computes the graph from scratch up to a node and returns its value as a float.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    float: the value.")
      .def("inc_forward_scalar", [](PyGraph& self, nb::handle index) {
        return read_node(*self.g, node_of(*self.g, index), false, [](const Tensor& t) { return as_scalar(t); });
      }, "index"_a,
           "Computes the nodes not yet computed, up to a node, and returns its value as a float.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    float: the value.")
      .def("forward_vec", [](PyGraph& self, nb::handle index) {
        return read_node(*self.g, node_of(*self.g, index), true, [](const Tensor& t) { return as_vector(t); });
      }, "index"_a,
           "Computes the graph from scratch up to a node and returns its values as a list.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    list[float]: the values.")
      .def("inc_forward_vec", [](PyGraph& self, nb::handle index) {
        return read_node(*self.g, node_of(*self.g, index), false, [](const Tensor& t) { return as_vector(t); });
      }, "index"_a,
           "Computes the nodes not yet computed, up to a node, and returns its values as a list.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "\n"
           "Returns:\n"
           "    list[float]: the values.")
      .def("backward", [](PyGraph& self, nb::handle index, truthy full) {
        backward_from(*self.g, node_of(*self.g, index), full);
      }, "index"_a, "full"_a = false,
           "Backpropagates from a scalar node of this graph.\n"
           "\n"
           "Args:\n"
           "    index (Expression | int): The node (an expression of this graph, or its index).\n"
           "    full (bool): Also compute the gradients of nodes that do not depend on parameters. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("inputMatrixLiteral", [](PyGraph& self, std::vector<float> v, const int_list<unsigned>& d, int_arg<unsigned> batch_size, nb::handle device) {
        return input(self.idle(), make_dim(d, batch_size, "inputMatrixLiteral"), v, device_from(device.ptr()));
      }, "v"_a, "d"_a, "batch_size"_a = 1, "device"_a = "",
           "An input of this graph from column-major values.\n"
           "\n"
           "Args:\n"
           "    v (list[float]): The values, column-major, batch elements last.\n"
           "    d (list[int]): The dims.\n"
           "    batch_size (int): The number of batch elements. Defaults to 1.\n"
           "    device (str): The device ('' : the default). Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    Expression: the input.")
      .def("inputSparseTensor", [](PyGraph& self, const int_list<unsigned>& idxs, std::vector<float> v,
                                   const int_list<unsigned>& dim, int_arg<unsigned> batch_size, float defval, nb::handle device) {
        return input(self.idle(), make_dim(dim, batch_size, "inputSparseTensor"), idxs, v, defval, device_from(device.ptr()));
      }, "idxs"_a, "v"_a, "dim"_a, "batch_size"_a = 1, "defval"_a = 0., "device"_a = "",
           "An input of this graph given by its nonzero values.\n"
           "\n"
           "Args:\n"
           "    idxs (list[int]): The flat (column-major) indices of the values.\n"
           "    v (list[float]): The values.\n"
           "    dim (list[int]): The dims.\n"
           "    batch_size (int): The number of batch elements. Defaults to 1.\n"
           "    defval (float): The value everywhere else. Defaults to 0.0.\n"
           "    device (str): The device ('' : the default). Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    Expression: the input.");
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
    return GraphResult{nb::borrow(global_wrapper)};
  }, "immediate_compute"_a = false, "check_validity"_a = false, "autobatching"_a = nb::none(),
           "Clears the current graph (DyNet's renew_cg): expressions made before become stale.\n"
           "\n"
           "Args:\n"
           "    immediate_compute (bool): Compute each node as soon as it is added (for debugging). Defaults to False.\n"
           "    check_validity (bool): Check each value for NaN and infinity as it is computed. Defaults to False.\n"
           "    autobatching (bool | None): Batch independent operations automatically; None: the --dynet-autobatch setting. Defaults to None.\n"
           "\n"
           "Returns:\n"
           "    ComputationGraph: the global graph.");
  m.def("cg", [global_wrapper] { return GraphResult{nb::borrow(global_wrapper)}; },
           "The global computation graph.\n"
           "\n"
           "Returns:\n"
           "    ComputationGraph: the graph that renew_cg() clears.");
  m.def("cg_version", [] { return global_graph_version(); },
           "A number that changes whenever the global graph is renewed.\n"
           "\n"
           "Returns:\n"
           "    int: the version.");
  m.def("cg_checkpoint", [] { current_graph().checkpoint(); },
           "Remembers the current graph's size; cg_revert() removes the nodes added after it.\n"
           "\n"
           "Returns:\n"
           "    None");
  m.def("cg_revert", [] { current_graph().revert(); },
           "Removes the nodes added to the current graph since the last cg_checkpoint().\n"
           "\n"
           "Returns:\n"
           "    None");
  m.def("print_text_graphviz", [] { write_stdout(graphviz_text(current_graph())); },
           "Prints the current graph in graphviz's dot format on sys.stdout.\n"
           "\n"
           "Returns:\n"
           "    None");
  m.def("dump_cg", [](const std::string& f, truthy v, truthy g, truthy n) { dump_graph(current_graph(), f, v, g, n); },
        "filename"_a = "", "show_values"_a = true, "show_gradients"_a = true, "nan_check_only"_a = false,
           "Writes the current graph's nodes (ops, dims, and optionally values and gradients) to a text file.\n"
           "\n"
           "Args:\n"
           "    filename (str): The file ('' : sys.stderr). Defaults to ''.\n"
           "    show_values (bool): Include the values. Defaults to True.\n"
           "    show_gradients (bool): Include the gradients. Defaults to True.\n"
           "    nan_check_only (bool): Only say whether each value has a NaN. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None");
  m.def("forward", [](nb::sequence exps, truthy recalculate) {
    Expression last;
    for (nb::handle h : exps) {
      Expression e = expr_of(h);
      if (last.pg == nullptr || e.i > last.i) last = e;
    }
    if (last.pg) read_value(last, recalculate, [](const Tensor&) {});
  }, "exps"_a, "recalculate"_a = false,
           "Computes several expressions with one forward pass (up to the last of them).\n"
           "\n"
           "Args:\n"
           "    exps (list[Expression]): The expressions.\n"
           "    recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None");

  // ---- initializers ----
  nb::class_<PyInit>(m, "PyInitializer", nb::dynamic_attr(),
                     "The base of DyNet's parameter initializers.\n\n"
                     "Pass an instance of a subclass (NormalInitializer, GlorotInitializer, ...) as `init` of "
                     "ParameterCollection.add_parameters or add_lookup_parameters.")
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
  nb::class_<PyParameters> params(m, "Parameters", nb::type_slots(expression_number_slots()),
                                  "A parameter (weights, a bias) of a ParameterCollection.\n\n"
                                  "It is an expression of the current graph wherever one is expected (W * x), with "
                                  "the Expression's operators and value methods. Made by "
                                  "ParameterCollection.add_parameters.");
  params.def("__repr__", [](PyParameters& p) { return "Parameter " + p.p.get_fullname() + " " + p.p.dim().str(); });
  params.def("expr", [](PyParameters& p, truthy update) { return p.expr(update); }, "update"_a = false,
           "The parameter as an expression of the current graph (cached per graph).\n"
           "\n"
           "Args:\n"
           "    update (bool): Whether gradients flow into it (False: a constant). Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    Expression: the parameter's node.")
      .def("shape", [](PyParameters& p) { Dim d = p.p.dim(); return nb::tuple(nb::cast(std::vector<unsigned>(d.d, d.d + d.nd))); },
           "The parameter's dims.\n"
           "\n"
           "Returns:\n"
           "    tuple[int, ...]: the dims.")
      .def("as_array", [](PyParameters& p) { return NDArrayF64{to_numpy(*p.p.values(), false, &p.p.get_storage().grad_mutex)}; },
           "The values.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("grad_as_array", [](PyParameters& p) { return NDArrayF64{to_numpy(*p.p.gradients(), false, &p.p.get_storage().grad_mutex)}; },
           "The accumulated gradient.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("set_value", [](PyParameters& p, nb::handle arr) {
        auto [dims, v] = from_array(arr, "set_value");
        if (v.size() != p.p.dim().size())
          throw std::invalid_argument("set_value: " + std::to_string(v.size()) + " values for a parameter of dim " + p.p.dim().str());
        p.p.set_value(v);
      }, "arr"_a,
           "Replaces the values.\n"
           "\n"
           "Args:\n"
           "    arr (numpy.ndarray | list): The new values, with the parameter's dims.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("clip_inplace", [](PyParameters& p, float l, float r) { p.p.clip_inplace(l, r); }, "left"_a, "right"_a,
           "Clips every value into [left, right].\n"
           "\n"
           "Args:\n"
           "    left (float): The lower bound.\n"
           "    right (float): The upper bound.\n"
           "\n"
           "Returns:\n"
           "    None");
  def_shared_parameter_methods(params);
  nb::class_<PyLookupParameters> lookups(m, "LookupParameters", nb::type_slots(expression_number_slots()),
                                         "A lookup table (embeddings) of a ParameterCollection: rows of equal dims.\n\n"
                                         "E[i] and dy.lookup(E, i) are row i as an expression of the current graph; "
                                         "made by ParameterCollection.add_lookup_parameters.");
  lookups.def("__repr__", [](PyLookupParameters& p) {
    return "LookupParameter " + p.p.get_fullname() + " " + p.p.dim().str() + " x " +
           std::to_string(p.p.get_storage().values.size()) + " rows";
  });
  lookups.def("expr", [](PyLookupParameters& p, truthy update) { return p.expr(update); }, "update"_a = true,
           "The whole table as one expression of the current graph, {dims..., rows}.\n"
           "\n"
           "Args:\n"
           "    update (bool): Whether gradients flow into it (False: a constant). Defaults to True.\n"
           "\n"
           "Returns:\n"
           "    Expression: the table's node.")
      .def("shape", [](PyLookupParameters& p) {
        Dim d = p.p.dim();
        std::vector<unsigned> s{static_cast<unsigned>(p.p.get_storage().values.size())};
        for (unsigned k = 0; k < d.nd; ++k) s.push_back(d[k]);
        return nb::tuple(nb::cast(s));
      },
           "The table's dims: (rows, dims of a row...).\n"
           "\n"
           "Returns:\n"
           "    tuple[int, ...]: the dims.")
      .def("__len__", [](PyLookupParameters& p) { return p.p.get_storage().values.size(); })
      .def("__getitem__", [](PyLookupParameters& p, int_arg<unsigned> i) { return settable_lookup(p.p, i); }, "i"_a,
           nb::sig("def __getitem__(self, i: int) -> Expression"))
      .def("batch", [](PyLookupParameters& p, const int_list<unsigned>& rows) {
        return settable_lookup(p.p, rows.value);
      }, "i"_a, nb::sig("def batch(self, i: collections.abc.Sequence[int]) -> Expression"),
           "A batched lookup of several rows (one per batch element; same as dy.lookup_batch).\n"
           "\n"
           "Args:\n"
           "    i (list[int]): The rows.\n"
           "\n"
           "Returns:\n"
           "    Expression: the rows, as a batch.")
      .def("init_row", [](PyLookupParameters& p, int_arg<unsigned> i, nb::handle row) {
        p.p.initialize(i, from_array(row, "init_row").values);
      }, "i"_a, "row"_a,
           "Sets the values of one row.\n"
           "\n"
           "Args:\n"
           "    i (int): The row.\n"
           "    row (numpy.ndarray | list): Its values.\n"
           "\n"
           "Returns:\n"
           "    None")
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
      }, "arr"_a,
           "Sets every row from an array of shape (rows, dims...).\n"
           "\n"
           "Args:\n"
           "    arr (numpy.ndarray): One row per entry.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("as_array", [](PyLookupParameters& p) {
        auto& st = p.p.get_storage();
        return NDArrayF64{rows_to_numpy(st.dim, st.values, nullptr, &st.grad_mutex)};
      },
           "The whole table, shape (rows, dims...).\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("grad_as_array", [](PyLookupParameters& p) {
        auto& st = p.p.get_storage();
        return NDArrayF64{rows_to_numpy(st.dim, st.grads, nullptr, &st.grad_mutex)};
      },
           "The accumulated gradient of the whole table, shape (rows, dims...).\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("row_as_array", [](PyLookupParameters& p, int_arg<unsigned> r) {
        auto& st = p.p.get_storage();
        if (r >= st.values.size()) throw nb::index_error(("row_as_array: row " + std::to_string(r) + " out of range").c_str());
        return NDArrayF64{to_numpy(st.values[r], false, &st.grad_mutex)};
      }, "row"_a,
           "The values of one row.\n"
           "\n"
           "Args:\n"
           "    row (int): The row.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("row_grad_as_array", [](PyLookupParameters& p, int_arg<unsigned> r) {
        auto& st = p.p.get_storage();
        if (r >= st.grads.size()) throw nb::index_error(("row_grad_as_array: row " + std::to_string(r) + " out of range").c_str());
        return NDArrayF64{to_numpy(st.grads[r], false, &st.grad_mutex)};
      }, "row"_a,
           "The accumulated gradient of one row.\n"
           "\n"
           "Args:\n"
           "    row (int): The row.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("rows_as_array", [](PyLookupParameters& p, const int_list<unsigned>& rows) {
        auto& st = p.p.get_storage();
        return NDArrayF64{rows_to_numpy(st.dim, st.values, &rows.value, &st.grad_mutex)};
      }, "rows"_a,
           "The values of several rows, shape (len(rows), dims...).\n"
           "\n"
           "Args:\n"
           "    rows (list[int]): The rows.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.")
      .def("rows_grad_as_array", [](PyLookupParameters& p, const int_list<unsigned>& rows) {
        auto& st = p.p.get_storage();
        return NDArrayF64{rows_to_numpy(st.dim, st.grads, &rows.value, &st.grad_mutex)};
      }, "rows"_a,
           "The accumulated gradients of several rows, shape (len(rows), dims...).\n"
           "\n"
           "Args:\n"
           "    rows (list[int]): The rows.\n"
           "\n"
           "Returns:\n"
           "    numpy.ndarray: a float64 copy.");
  def_shared_parameter_methods(lookups);
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
                                  "Holds Parameters and LookupParameters (alias: Model).\n\n"
                                  "Nested collections (add_subcollection) name their parameters /outer/inner/name, as "
                                  "in DyNet's model files; trainers update every parameter of the collection they "
                                  "were given.")
      .def(nb::init<>())
      .def("__repr__", [](ParameterCollection& pc) {
        return "<ParameterCollection " + pc.get_fullname() + ": " +
               std::to_string(pc.parameters_list().size() + pc.lookup_parameters_list().size()) + " parameters, " +
               std::to_string(pc.parameter_count()) + " values>";
      })
      .def("add_parameters", [=](ParameterCollection& pc, nb::handle dim, nb::handle init, const std::string& name,
                                 nb::handle device, float scale, float mean, float std) {
        if (is_array(init)) return from_numpy(pc, init, name, device);
        const std::vector<unsigned> dims = dims_of(dim, "add_parameters");
        const Dim d = make_dim(dims, 1, "add_parameters");
        auto in = initializer("add_parameters", init, dims, scale, mean, std);
        Device* on = device_from(device.ptr());
        return PyParameters{in ? pc.add_parameters(d, *in, name, on) : pc.add_parameters(d, 0.f, name, on), {}};
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1., "mean"_a = 0., "std"_a = 1.,
           "Adds a parameter (a weight matrix, a bias, ...).\n"
           "\n"
           "Args:\n"
           "    dim (int | tuple[int, ...]): The dims.\n"
           "    init (None | float | str | numpy.ndarray | PyInitializer): None: the default (Glorot); a number: that constant; 'uniform', 'normal', 'glorot', 'he', 'identity' or 'saxe'; an array: its values; or an initializer object. Defaults to None.\n"
           "    name (str): The name ('' : one is made up). Defaults to ''.\n"
           "    device (str): The device ('' : the default). Defaults to ''.\n"
           "    scale (float): The scale of init='uniform' (values in [-scale, scale]) or 'saxe'. Defaults to 1.0.\n"
           "    mean (float): The mean of init='normal'. Defaults to 0.0.\n"
           "    std (float): The standard deviation of init='normal'. Defaults to 1.0.\n"
           "\n"
           "Returns:\n"
           "    Parameters: the new parameter.")
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
      }, "dim"_a, "init"_a = nb::none(), "name"_a = "", "device"_a = "", "scale"_a = 1., "mean"_a = 0., "std"_a = 1.,
           "Adds a lookup table (word embeddings, ...).\n"
           "\n"
           "Args:\n"
           "    dim (tuple[int, ...]): (rows, dims of a row...).\n"
           "    init (None | float | str | numpy.ndarray | PyInitializer): None: the default (Glorot); a number: that constant; 'uniform', 'normal', 'glorot', 'he', 'identity' or 'saxe'; an array: its values; or an initializer object. Defaults to None.\n"
           "    name (str): The name ('' : one is made up). Defaults to ''.\n"
           "    device (str): The device ('' : the default). Defaults to ''.\n"
           "    scale (float): The scale of init='uniform' or 'saxe'. Defaults to 1.0.\n"
           "    mean (float): The mean of init='normal'. Defaults to 0.0.\n"
           "    std (float): The standard deviation of init='normal'. Defaults to 1.0.\n"
           "\n"
           "Returns:\n"
           "    LookupParameters: the new table.")
      .def("parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle device) {
        return from_numpy(pc, a, name, device);
      }, "array"_a, "name"_a = "", "device"_a = "",
           "Adds a parameter with the values (and dims) of an array.\n"
           "\n"
           "Args:\n"
           "    array (numpy.ndarray): The values.\n"
           "    name (str): The name. Defaults to ''.\n"
           "    device (str): The device. Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    Parameters: the new parameter.")
      .def("lookup_parameters_from_numpy", [=](ParameterCollection& pc, nb::handle a, const std::string& name, nb::handle device) {
        return lookup_from_numpy(pc, a, name, device);
      }, "array"_a, "name"_a = "", "device"_a = "",
           "Adds a lookup table with the rows of an array of shape (rows, dims...).\n"
           "\n"
           "Args:\n"
           "    array (numpy.ndarray): The rows.\n"
           "    name (str): The name. Defaults to ''.\n"
           "    device (str): The device. Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    LookupParameters: the new table.")
      .def("add_subcollection", [](ParameterCollection& pc, std::optional<std::string> name) {
        return pc.add_subcollection(name.value_or(""));
      }, "name"_a = nb::none(),
           "Adds a nested collection; its parameters are named /this/name/....\n"
           "\n"
           "Args:\n"
           "    name (str | None): The subcollection's name (None: one is made up). Defaults to None.\n"
           "\n"
           "Returns:\n"
           "    ParameterCollection: the subcollection.")
      .def("parameter_count", &ParameterCollection::parameter_count,
           "The number of values in all parameters and lookup tables.\n"
           "\n"
           "Returns:\n"
           "    int: the count.")
      .def("name", &ParameterCollection::get_fullname,
           "The collection's full name ('/' for a top-level one).\n"
           "\n"
           "Returns:\n"
           "    str: the name.")
      .def("get_weight_decay", &ParameterCollection::get_weight_decay_lambda,
           "The L2 weight decay λ applied at each update.\n"
           "\n"
           "Returns:\n"
           "    float: λ.")
      .def("set_weight_decay", &ParameterCollection::set_weight_decay_lambda, "lam"_a,
           "Sets the L2 weight decay λ applied at each update.\n"
           "\n"
           "Args:\n"
           "    lam (float): λ, in [0, 1).\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("set_weight_decay_lambda", &ParameterCollection::set_weight_decay_lambda, "lam"_a,
           "Sets the L2 weight decay λ applied at each update (same as set_weight_decay).\n"
           "\n"
           "Args:\n"
           "    lam (float): λ, in [0, 1).\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("parameters_list", [](ParameterCollection& pc) {
        std::vector<PyParameters> out;
        for (auto& s : pc.parameters_list()) out.push_back({Parameter(s), {}});
        return out;
      },
           "The collection's parameters (subcollections' included).\n"
           "\n"
           "Returns:\n"
           "    list[Parameters]: them.")
      .def("lookup_parameters_list", [](ParameterCollection& pc) {
        std::vector<PyLookupParameters> out;
        for (auto& s : pc.lookup_parameters_list()) out.push_back({LookupParameter(s), {}});
        return out;
      },
           "The collection's lookup tables (subcollections' included).\n"
           "\n"
           "Returns:\n"
           "    list[LookupParameters]: them.")
      .def("save", [](ParameterCollection& pc, const std::string& f, const std::string& key, truthy append) {
        TextFileSaver(f, append).save(pc, key);
      }, "fname"_a, "name"_a = "", "append"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "Writes the collection to a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    name (str): The prefix to store it under ('' : its own name). Defaults to ''.\n"
           "    append (bool): Add to the file instead of replacing it. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("write_to_textfile", [](ParameterCollection& pc, const std::string& f, const std::string& key, truthy append) {
        TextFileSaver(f, append).save(pc, key);
      }, "fname"_a, "key"_a = "", "append"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "Writes the collection to a DyNet text model file (same as save).\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The prefix to store it under. Defaults to ''.\n"
           "    append (bool): Add to the file instead of replacing it. Defaults to False.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("populate", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        TextFileLoader(f).populate(pc, key);
      }, "fname"_a, "key"_a = "", nb::call_guard<nb::gil_scoped_release>(),
           "Reads the values of every parameter from a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The prefix they were stored under. Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("populate_from_textfile", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        TextFileLoader(f).populate(pc, key);
      }, "fname"_a, "key"_a = "", nb::call_guard<nb::gil_scoped_release>(),
           "Reads the values of every parameter from a DyNet text model file (same as populate).\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The prefix they were stored under. Defaults to ''.\n"
           "\n"
           "Returns:\n"
           "    None")
      .def("load_param", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        return PyParameters{TextFileLoader(f).load_param(pc, key), {}};
      }, "fname"_a, "key"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Adds a parameter to this collection from a record of a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The record's name.\n"
           "\n"
           "Returns:\n"
           "    Parameters: the loaded parameter.")
      .def("load_lookup_param", [](ParameterCollection& pc, const std::string& f, const std::string& key) {
        return PyLookupParameters{TextFileLoader(f).load_lookup_param(pc, key), {}};
      }, "fname"_a, "key"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Adds a lookup table to this collection from a record of a DyNet text model file.\n"
           "\n"
           "Args:\n"
           "    fname (str): The file.\n"
           "    key (str): The record's name.\n"
           "\n"
           "Returns:\n"
           "    LookupParameters: the loaded table.");

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
  // inspect.signature for nanobind's functions (dynet/__init__.py builds the Signature from __nb_signature__):
  // their types are immutable from Python, so the property goes into the type's dict here.
  m.def("_install_signatures", [m](nb::handle prop, nb::handle bound_prop) {
    nb::object pc = nb::module_::import_("dynet._dynet").attr("ParameterCollection")();
    PyTypeObject* types[] = {Py_TYPE(m.attr("cg").ptr()), Py_TYPE(nb::getattr(pc.type(), "parameter_count").ptr()),
                             Py_TYPE(pc.attr("parameter_count").ptr())};
    for (int k = 0; k < 3; ++k) {
      if (PyDict_SetItemString(types[k]->tp_dict, "__signature__", (k == 2 ? bound_prop : prop).ptr()) < 0)
        throw nb::python_error();
      PyType_Modified(types[k]);
    }
  }, "prop"_a, "bound_prop"_a);
  m.def("save_safetensors", [](const std::string& path, const ParameterCollection& pc) { save_safetensors(path, pc); },
        "path"_a, "pc"_a,
        "Writes the values of every parameter of a collection to a safetensors file.\n\n"
        "Keys are the parameters' full names; a parameter of dims {d0,d1} is an F32 tensor of shape [d0, d1] (row-major, "
        "as numpy shows it), a lookup table of n rows is [n, dims...]. Gradients are not stored.\n\n"
        "Args:\n"
        "    path (str): The file to write.\n"
        "    pc (ParameterCollection): The parameters to save.\n\n"
        "Returns:\n    None");
  m.def("load_safetensors", [](const std::string& path, ParameterCollection& pc) { load_safetensors(path, pc); },
        "path"_a, "pc"_a,
        "Reads the values of every parameter of a collection from a safetensors file (see save_safetensors).\n\n"
        "Each parameter must be in the file under its full name, with its shape; tensors the collection lacks are "
        "ignored. Gradients are cleared.\n\n"
        "Args:\n"
        "    path (str): The file to read.\n"
        "    pc (ParameterCollection): The parameters to fill.\n\n"
        "Returns:\n    None");
  m.def("reset_random_seed", [](int_arg<unsigned> seed) { reset_rng(seed); }, "seed"_a,
           "Reseeds the random number generator (dropout, noise, random_* ops, initializers).\n"
           "\n"
           "Args:\n"
           "    seed (int): The new seed.\n"
           "\n"
           "Returns:\n"
           "    None");

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
  custom("vecInput", [](int_arg<unsigned> dim, nb::object device) {
    return nb::steal(updatable_input(Dim({dim}), std::vector<float>(dim, 0.f), device));
  }, "dim"_a, "device"_a = "");
  custom("scalarInput", [](float s, nb::object device) { return nb::steal(updatable_input(Dim({1}), {s}, device)); },
         "s"_a, "device"_a = "");
  custom("matInput", [](int_arg<unsigned> d1, int_arg<unsigned> d2) {
    return nb::steal(updatable_input(Dim({d1, d2}), std::vector<float>(size_t(d1) * d2, 0.f)));
  }, "d1"_a, "d2"_a);
  custom("inputMatrix", [](std::vector<float> v, const int_list<unsigned>& d) {
    if (d.value.size() != 2) throw std::invalid_argument("inputMatrix: d must be (rows, cols)");
    const Dim dim = make_dim(d, 1, "inputMatrix");
    return nb::steal(updatable_input(dim, std::move(v)));
  }, "v"_a, "d"_a);
  custom("sparse_inputTensor", [](const std::vector<int_list<unsigned>>& index_lists, std::vector<float> values,
                                  int_list<unsigned> shape_arg, truthy batched, float defval, nb::object device) {
    std::vector<unsigned> shape = std::move(shape_arg.value);
    std::vector<std::vector<unsigned>> idxs;
    for (const auto& l : index_lists) idxs.push_back(l.value);
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
  }, "idxs"_a, "values"_a, "shape"_a, "batched"_a = false, "defval"_a = 0., "device"_a = "");
}

}  // namespace dynet::py

NB_MODULE(_dynet, m) {
  using namespace dynet::py;
  init_expression(m);
  init_arrays(m);
  init_module(m);
  init_builders(m);
  init_ops(m);
  init_profiler(m);
  custom_ops().clear();  // the op objects hold them now; no C++ static may outlive the interpreter
}
