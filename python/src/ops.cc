// The op functions of `dynet`, built at import from the API entries (src/ops/api.h): no list of ops here.
// Each Python name becomes one callable object (type dynet._dynet.op) holding the entries (overloads) that
// carry that name. A call converts the arguments by the entry's parameter types, tries the overloads in
// registration order, and calls the C++ function through the entry's invoker. Its __nb_signature__ (read
// by nanobind's stubgen) is written from the same entries, so the stubs show the same names and defaults.
#include "ext.h"  // Python.h first

#include <structmember.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/api.h"

namespace dynet::py {

Device* device_from(PyObject* o) {
  if (o == Py_None) return nullptr;
  if (!PyUnicode_Check(o)) throw std::invalid_argument("device: expected a string such as 'CPU'");
  const char* s = PyUnicode_AsUTF8(o);
  if (!s) throw nb::python_error();
  if (*s == 0) return nullptr;
  return get_device_manager_device(s);
}

namespace {

// One Python parameter of an entry.
struct PyParam {
  std::string name;
  nb::object def;       // default (or, for a Python-only parameter, the value that selects the entry)
  int cpp = -1;         // the C++ parameter it converts to; -1: Python-only, -2: batch_size, -3: ignored
};

struct Overload {
  const ApiFn* fn;
  std::vector<PyParam> params;
  std::vector<ApiParamSpec> cpp;  // C++ parameter names and defaults (empty for Python-only adapters)
  int dim_param = -1;             // the Dim parameter batch_size applies to
};

// Storage for one converted argument; the largest alternative decides the size.
struct Slot {
  alignas(16) unsigned char buf[sizeof(std::vector<std::vector<unsigned>>) > sizeof(Dim)
                                    ? sizeof(std::vector<std::vector<unsigned>>) + sizeof(Dim)
                                    : sizeof(Dim) + 16];
  void (*destroy)(void*) = nullptr;
  template <class T, class... A>
  T* make(A&&... a) {
    T* p = new (buf) T(std::forward<A>(a)...);
    if constexpr (!std::is_trivially_destructible_v<T>) destroy = [](void* q) { static_cast<T*>(q)->~T(); };
    return p;
  }
  ~Slot() {
    if (destroy) destroy(buf);
  }
};
static_assert(sizeof(Dim) + 16 <= sizeof(Slot::buf));

// "Mismatch": the argument does not fit this overload (try the next); other exceptions are errors.
struct Mismatch {};

// Set while a call is retried with DyNet's Cython conversions, after no overload took the arguments as they are:
// a float for an int is truncated (pick(x, 2.0), a dim computed with /), any object is a bool by its truth.
thread_local bool t_cython_conversions = false;

long long to_int(PyObject* o) {
  if (t_cython_conversions) {
    try {
      return int_or_float_in_range(o, LLONG_MIN, LLONG_MAX, "int");
    } catch (const nb::python_error&) {
      throw Mismatch{};
    } catch (const nb::builtin_exception&) {  // NaN, infinities, out of range
      throw Mismatch{};
    }
  }
  if (PyBool_Check(o) || !PyIndex_Check(o)) throw Mismatch{};
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();  // an __index__ that refuses (a numpy array of one element): the Cython pass may take it
    throw Mismatch{};
  }
  return v;
}
unsigned to_unsigned(PyObject* o, const char* what) {
  const long long v = to_int(o);
  if (v < 0 || v > 0xffffffffLL)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(v) + " is not a valid unsigned index");
  return static_cast<unsigned>(v);
}
float to_float(PyObject* o) {
  if (PyFloat_Check(o)) return static_cast<float>(PyFloat_AS_DOUBLE(o));
  if (PyBool_Check(o) || !(PyLong_Check(o) || PyIndex_Check(o) || PyNumber_Check(o))) throw Mismatch{};
  const double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw Mismatch{};
  }
  return static_cast<float>(d);
}
// A sequence (list, tuple, numpy array, range) as a fast sequence; strings and Expressions are not.
nb::object as_sequence(PyObject* o) {
  if (PyUnicode_Check(o) || PyBytes_Check(o) || Py_TYPE(o) == ExprType || !PySequence_Check(o)) throw Mismatch{};
  PyObject* s = PySequence_Fast(o, "expected a sequence");
  if (!s) {
    PyErr_Clear();
    throw Mismatch{};
  }
  return nb::steal(s);
}
template <class T, class F>
std::vector<T> to_vector(PyObject* o, F&& one) {
  nb::object s = as_sequence(o);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(s.ptr());
  PyObject** items = PySequence_Fast_ITEMS(s.ptr());
  std::vector<T> v;
  v.reserve(n);
  for (Py_ssize_t k = 0; k < n; ++k) v.push_back(one(items[k]));
  return v;
}

Dim to_dim(PyObject* o, const char* what) {
  // One number is one dim (a float too, in the Cython pass: zeros(3.0)).
  if ((PyIndex_Check(o) || (t_cython_conversions && PyFloat_Check(o))) && !PyBool_Check(o))
    return Dim({to_unsigned(o, what)});
  std::vector<unsigned> d = to_vector<unsigned>(o, [&](PyObject* x) { return to_unsigned(x, what); });
  if (d.size() > DYNET_MAX_TENSOR_DIM)
    throw std::invalid_argument(std::string(what) + ": at most " + std::to_string(DYNET_MAX_TENSOR_DIM) + " dims");
  Dim r;
  r.nd = static_cast<unsigned>(d.size());
  for (unsigned k = 0; k < r.nd; ++k) r.d[k] = d[k];
  return r;
}

GradientMode to_gradient_mode(PyObject* o) {
  if (!PyUnicode_Check(o)) throw Mismatch{};
  const std::string s = PyUnicode_AsUTF8(o);
  if (s == "zero_gradient") return zero_gradient;
  if (s == "straight_through_gradient") return straight_through_gradient;
  throw std::invalid_argument("gradient_mode must be 'zero_gradient' or 'straight_through_gradient', not '" + s + "'");
}

// C++ default (for a C++ parameter the Python spec leaves out): the few literal forms expr.h uses.
void cpp_default(Slot& slot, ApiType t, const std::string& def, void*& out) {
  switch (t) {
    case ApiType::Device: out = slot.make<Device*>(nullptr); return;
    case ApiType::Real: out = slot.make<float>(std::stof(def)); return;
    case ApiType::Unsigned: out = slot.make<unsigned>(static_cast<unsigned>(std::stoul(def))); return;
    case ApiType::Int: out = slot.make<int>(std::stoi(def)); return;
    case ApiType::Bool: out = slot.make<bool>(def == "true"); return;
    case ApiType::GradMode: out = slot.make<GradientMode>(def == "zero_gradient" ? zero_gradient : straight_through_gradient); return;
    default: throw std::logic_error("no Python value for a C++ default of type " + std::string(api_cpp_type(t)));
  }
}

// The element of the graph's GraphInputs that an index pointer argument points to (what `.set()` of
// the resulting expression changes).
struct SettableArg {
  Settable kind = Settable::None;
  void* target = nullptr;
};

// Converts o into slot as type t; throws Mismatch when it cannot be that type.
void* convert(Slot& slot, ApiType t, PyObject* o, const char* what, SettableArg& settable) {
  switch (t) {
    case ApiType::Expr: {
      Expression* e = slot.make<Expression>();
      if (!to_expr(o, *e)) {
        if (PyErr_Occurred()) throw nb::python_error();
        throw Mismatch{};
      }
      return e;
    }
    case ApiType::ExprList: {
      if (Py_TYPE(o) == ExprType) throw Mismatch{};
      return slot.make<std::vector<Expression>>(to_vector<Expression>(o, [](PyObject* x) {
        Expression e;
        if (!to_expr(x, e)) {
          if (PyErr_Occurred()) throw nb::python_error();
          throw Mismatch{};
        }
        return e;
      }));
    }
    case ApiType::Real: return slot.make<float>(to_float(o));
    case ApiType::Unsigned: return slot.make<unsigned>(to_unsigned(o, what));
    case ApiType::Int: return slot.make<int>(static_cast<int>(to_int(o)));
    case ApiType::Bool: {
      // Retried with any object by its truth value (numpy.bool_ too), as DyNet's Cython bint took it.
      if (!PyBool_Check(o) && !PyLong_Check(o) && !t_cython_conversions) throw Mismatch{};
      const int truth = PyObject_IsTrue(o);
      if (truth < 0) throw nb::python_error();
      return slot.make<bool>(truth == 1);
    }
    case ApiType::Dim: return slot.make<Dim>(to_dim(o, what));
    case ApiType::RealVec: return slot.make<std::vector<float>>(to_vector<float>(o, to_float));
    case ApiType::UnsignedVec:
      return slot.make<std::vector<unsigned>>(to_vector<unsigned>(o, [&](PyObject* x) { return to_unsigned(x, what); }));
    case ApiType::IntVec:
      return slot.make<std::vector<int>>(to_vector<int>(o, [](PyObject* x) { return static_cast<int>(to_int(x)); }));
    case ApiType::UnsignedVecVec:
      return slot.make<std::vector<std::vector<unsigned>>>(to_vector<std::vector<unsigned>>(o, [&](PyObject* x) {
        return to_vector<unsigned>(x, [&](PyObject* y) { return to_unsigned(y, what); });
      }));
    case ApiType::GradMode: return slot.make<GradientMode>(to_gradient_mode(o));
    case ApiType::Device: return slot.make<Device*>(device_from(o));
    case ApiType::Graph: return &current_graph();
    case ApiType::Param: {
      Parameter* p = slot.make<Parameter>();
      if (!to_parameter(o, *p)) throw Mismatch{};
      return p;
    }
    case ApiType::LookupParam: {
      LookupParameter* p = slot.make<LookupParameter>();
      if (!to_lookup_parameter(o, *p)) throw Mismatch{};
      return p;
    }
    case ApiType::UnsignedPtr: {
      const unsigned v = to_unsigned(o, what);
      unsigned* target = &current_inputs().indices.emplace_back(v);
      settable = {Settable::Index, target};
      return slot.make<const unsigned*>(target);
    }
    case ApiType::UnsignedVecPtr: {
      std::vector<unsigned> v = to_vector<unsigned>(o, [&](PyObject* x) { return to_unsigned(x, what); });
      std::vector<unsigned>* target = &current_inputs().index_lists.emplace_back(std::move(v));
      settable = {Settable::Indices, target};
      return slot.make<const std::vector<unsigned>*>(target);
    }
    default: throw Mismatch{};  // the other pointer forms are C++ only
  }
}

bool equal(PyObject* a, PyObject* b) {
  if (a == b) return true;
  const int r = PyObject_RichCompareBool(a, b, Py_EQ);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

// A flag that picks the overload (lookup's `update`), given any object where the overload fixes a bool:
// by its truth value, as Cython's bint took it (retried with the Cython conversions only).
bool same_truth(PyObject* given, PyObject* fixed) {
  if (!t_cython_conversions || !PyBool_Check(fixed)) return false;
  const int truth = PyObject_IsTrue(given);
  if (truth < 0) throw nb::python_error();
  return (truth == 1) == (fixed == Py_True);
}

// ---- the callable type ----
struct PyOp {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  std::vector<Overload>* overloads;
  PyObject* name;
  PyObject* signature;  // __nb_signature__
  PyObject* doc;
  PyObject* impl;  // custom entries ("@name"): the module's own function, called with the arguments as given
};

PyObject* call_overload(const Overload& ov, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  const size_t np = ov.params.size();
  PyObject* given[16] = {};
  if (nargs > np) throw Mismatch{};
  for (size_t k = 0; k < nargs; ++k) given[k] = args[k];
  if (kwnames) {
    const Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nk; ++k) {
      const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
      size_t j = 0;
      while (j < np && ov.params[j].name != key) ++j;
      if (j == np || given[j]) throw Mismatch{};
      given[j] = args[nargs + k];
    }
  }
  Slot slots[16];
  void* ptrs[16] = {};
  PyObject* batch_size = nullptr;
  SettableArg settable;
  for (size_t k = 0; k < np; ++k) {
    const PyParam& p = ov.params[k];
    PyObject* v = given[k] ? given[k] : p.def.ptr();
    if (!v) throw Mismatch{};  // a required argument is missing
    if (p.cpp == -2) {
      batch_size = v;
    } else if (p.cpp == -1) {
      if (!equal(v, p.def.ptr()) && !same_truth(v, p.def.ptr())) throw Mismatch{};
    } else if (p.cpp == -3) {
      to_int(v);
    } else {
      ptrs[p.cpp] = convert(slots[p.cpp], ov.fn->types[p.cpp], v, p.name.c_str(), settable);
    }
  }
  for (unsigned k = 0; k < ov.fn->ntypes; ++k) {
    if (ptrs[k]) continue;
    if (ov.fn->types[k] == ApiType::Graph)
      ptrs[k] = &current_graph();
    else
      cpp_default(slots[k], ov.fn->types[k], ov.cpp.at(k).def, ptrs[k]);
  }
  if (batch_size && ov.dim_param >= 0) static_cast<Dim*>(ptrs[ov.dim_param])->bd = to_unsigned(batch_size, "batch_size");
  return wrap(ov.fn->invoke(ov.fn->fn, ptrs), settable.kind, settable.target);
}

PyObject* op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyOp* op = reinterpret_cast<PyOp*>(self);
  if (op->impl) return PyObject_Vectorcall(op->impl, args, nargsf, kwnames);
  const size_t nargs = PyVectorcall_NARGS(nargsf);
  struct CythonConversions {  // t_cython_conversions for one pass over the overloads
    explicit CythonConversions(bool on) { t_cython_conversions = on; }
    ~CythonConversions() { t_cython_conversions = false; }
  };
  try {
    // The arguments as they are first, then (every overload refused them) with the Cython conversions.
    for (const bool cython : {false, true}) {
      const CythonConversions pass(cython);
      for (const Overload& ov : *op->overloads) {
        try {
          return call_overload(ov, args, nargs, kwnames);
        } catch (const Mismatch&) {
        }
      }
    }
  } catch (...) {
    raise_from_cpp();
    return nullptr;
  }
  // No overload fits: say what was expected.
  std::string got;
  for (size_t k = 0; k < nargs; ++k) got += std::string(k ? ", " : "") + Py_TYPE(args[k])->tp_name;
  if (kwnames)
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
      got += std::string(got.empty() ? "" : ", ") + PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)) + "=" +
             Py_TYPE(args[nargs + k])->tp_name;
  PyErr_Format(PyExc_TypeError, "%U(): incompatible arguments (%s); expected:\n%U", op->name, got.c_str(), op->signature);
  return nullptr;
}

void op_dealloc(PyObject* self) {
  PyOp* op = reinterpret_cast<PyOp*>(self);
  delete op->overloads;
  Py_XDECREF(op->name);
  Py_XDECREF(op->signature);
  Py_XDECREF(op->doc);
  Py_XDECREF(op->impl);
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyObject* op_get_signature(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<PyOp*>(self)->signature); }
PyObject* op_get_name(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<PyOp*>(self)->name); }
PyObject* op_get_doc(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<PyOp*>(self)->doc); }
PyObject* op_get_module(PyObject*, void*) { return PyUnicode_FromString("dynet"); }
PyObject* op_repr(PyObject* self) { return PyUnicode_FromFormat("<dynet op %U>", reinterpret_cast<PyOp*>(self)->name); }

// Pickled by name, as the original's functions were (a program's options may hold dy.tanh): the name
// alone tells pickle and copy to store, and to return, the module attribute dynet.<name>.
PyObject* op_reduce(PyObject* self, PyObject*) { return Py_NewRef(reinterpret_cast<PyOp*>(self)->name); }
PyMethodDef g_op_methods[] = {{"__reduce__", op_reduce, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_op_getset[] = {
    {"__nb_signature__", op_get_signature, nullptr, nullptr, nullptr},
    {"__name__", op_get_name, nullptr, nullptr, nullptr},
    {"__qualname__", op_get_name, nullptr, nullptr, nullptr},
    {"__doc__", op_get_doc, nullptr, nullptr, nullptr},
    {"__module__", op_get_module, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject* op_type() {
  static PyTypeObject* type = [] {
    static PyMemberDef members[] = {
        {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(PyOp, vectorcall)), READONLY, nullptr},
        {nullptr, 0, 0, 0, nullptr}};
    static PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(op_dealloc)},
                                  {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                                  {Py_tp_getset, g_op_getset},
                                  {Py_tp_methods, g_op_methods},
                                  {Py_tp_members, members},
                                  {Py_tp_repr, reinterpret_cast<void*>(op_repr)},
                                  {0, nullptr}};
    static PyType_Spec spec = {"dynet._dynet.op", sizeof(PyOp), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};
    PyObject* t = PyType_FromSpec(&spec);
    if (!t) throw nb::python_error();
    return reinterpret_cast<PyTypeObject*>(t);
  }();
  return type;
}

// The Python type shown in stubs for a parameter type.
const char* py_type(ApiType t) {
  switch (t) {
    case ApiType::Expr: return "Expression";
    case ApiType::ExprList: return "collections.abc.Sequence[Expression]";
    case ApiType::Real: return "float";
    case ApiType::Unsigned:
    case ApiType::UnsignedPtr:
    case ApiType::Int: return "int";
    case ApiType::Bool: return "bool";
    case ApiType::Dim: return "int | collections.abc.Sequence[int]";
    case ApiType::RealVec: return "collections.abc.Sequence[float]";
    case ApiType::UnsignedVec:
    case ApiType::UnsignedVecPtr:
    case ApiType::IntVec: return "collections.abc.Sequence[int]";
    case ApiType::UnsignedVecVec: return "collections.abc.Sequence[collections.abc.Sequence[int]]";
    case ApiType::GradMode: return "str";
    case ApiType::Device: return "str";
    case ApiType::Param: return "Parameters";
    case ApiType::LookupParam: return "LookupParameters";
    default: return "object";
  }
}

// `def name(a: T, b: T = default) -> Expression: ...` for one overload (custom entries: untyped).
std::string stub_line(const std::string& name, const Overload& ov, const ApiSpec& spec, PyObject* repr_of) {
  std::string s = "def " + name + "(";
  for (size_t k = 0; k < ov.params.size(); ++k) {
    const PyParam& p = ov.params[k];
    if (k) s += ", ";
    s += p.name;
    if (!spec.custom) {
      if (p.cpp >= 0) s += std::string(": ") + py_type(ov.fn->types[p.cpp]);
      else if (p.cpp == -2 || p.cpp == -3) s += ": int";
    }
    if (p.def) s += (spec.custom ? "=" : " = ") + spec.params[k].def;
  }
  (void)repr_of;
  return s + ") -> Expression: ...";
}

// ---- docstrings and inspect signatures, generated from the entries ----

// What an argument is, by "op.param" (where a name means different things in different ops) or by name.
const char* param_description(const std::string& fn, const std::string& name) {
  static const std::unordered_map<std::string, const char*> by_op = {
      {"colwise_add.y", "The column vector b added to every column of x."},
      {"constrained_softmax.y", "The upper bounds u, one per value of x."},
      {"binary_log_loss.x", "The predicted probabilities, in (0, 1)."},
      {"binary_log_loss.y", "The target probabilities (usually 0 or 1)."},
      {"filter1d_narrow.y", "The filter f, {rows of x, width, number of filters}."},
      {"contract3d_1d.y", "The vector contracted with the third dim of x."},
      {"contract3d_1d_bias.y", "The vector contracted with the third dim of x."},
      {"contract3d_1d_1d.y", "The vector contracted with the third dim of x."},
      {"contract3d_1d_1d_bias.y", "The vector contracted with the third dim of x."},
      {"contract3d_1d_1d.z", "The vector contracted with the second dim of x."},
      {"contract3d_1d_1d_bias.z", "The vector contracted with the second dim of x."},
      {"contract3d_1d_bias.b", "The bias added to the result."},
      {"contract3d_1d_1d_bias.b", "The bias added to the result."},
      {"conv2d_bias.b", "The bias, one value per output channel."},
      {"layer_norm.g", "The gain, one value per element of x."},
      {"layer_norm.b", "The bias, one value per element of x."},
      {"weight_norm.g", "The scalar gain."},
      {"mean_dim.b", "Whether to also reduce over the batch."},
      {"moment_dim.b", "Whether to also reduce over the batch."},
      {"std_dim.b", "Whether to also reduce over the batch."},
      {"sum_dim.b", "Whether to also reduce over the batch."},
      {"mean_dim.d", "The dims to reduce over."},
      {"moment_dim.d", "The dims to reduce over."},
      {"std_dim.d", "The dims to reduce over."},
      {"sum_dim.d", "The dims to reduce over."},
      {"mean_dim.n", "The count to divide by; 0: the number of values reduced."},
      {"moment_dim.n", "The count to divide by; 0: the number of values reduced."},
      {"std_dim.n", "The count to divide by; 0: the number of values reduced."},
      {"sum_dim.n", "Accepted for compatibility with DyNet's Python module and ignored."},
      {"hinge.v", "The index of the correct class."},
      {"hinge_dim.v", "The correct index of each column (a list per batch element, or one list for all)."},
      {"hinge.m", "The margin."},
      {"hinge_batch.m", "The margin."},
      {"hinge_dim.m", "The margin."},
      {"pairwise_rank_loss.m", "The margin."},
      {"pairwise_rank_loss.x", "The score that should be higher."},
      {"pairwise_rank_loss.y", "The score that should be lower."},
      {"pickneglogsoftmax.v", "The index of the correct class."},
      {"pick_batch_elem.v", "The batch element to take."},
      {"kmh_ngram.v", "The n-gram width n."},
      {"circ_conv.v", "The second vector."},
      {"circ_corr.v", "The second vector."},
      {"inputVector.v", "The values (a list or 1-d numpy array)."},
      {"inputMatrix.v", "The values, column-major."},
      {"inputMatrix.d", "The (rows, cols) of the matrix."},
      {"reshape.d", "The new dims (the same number of values per batch element)."},
      {"one_hot.d", "The length of the vector."},
      {"concatenate.d", "The dim to concatenate along."},
      {"dropout_dim.d", "The dim along which one mask value is shared."},
      {"kmax_pooling.d", "The dim to pool along."},
      {"block_dropout.p", "The probability of dropping the whole tensor."},
      {"dropout.p", "The probability of dropping each value."},
      {"dropout_batch.p", "The probability of dropping each batch element."},
      {"dropout_dim.p", "The probability of dropping each slice."},
      {"random_bernoulli.p", "The probability of each value being `scale`."},
      {"lookup.p", "The lookup table."},
      {"lookup_batch.p", "The lookup table."},
      {"poisson_loss.x", "The observed count t."},
      {"pick_range.e", "The end (exclusive)."},
      {"pickrange.e", "The end (exclusive)."},
      {"pick_range.s", "The start (inclusive)."},
      {"pickrange.s", "The start (inclusive)."},
      {"scalarInput.s", "The value."},
      {"random_gumbel.beta", "The scale β."},
      {"silu.beta", "The slope β inside the sigmoid."},
      {"noise.stddev", "The standard deviation of the noise."},
      {"random_normal.stddev", "The standard deviation."},
      {"vecInput.dim", "The length of the vector (its values start at 0; set them with .set())."},
      {"pick.dim", "The dim to pick along (removed from the result)."},
      {"pick_batch.dim", "The dim to pick along (removed from the result)."},
      {"constant.val", "The value of every element."},
      {"elu.alpha", "The α of the negative part."},
      {"huber_distance.c", "The threshold between the quadratic and the linear part."},
  };
  static const std::unordered_map<std::string, const char*> by_name = {
      {"x", "The argument."},
      {"y", "The second argument."},
      {"e", "The argument."},
      {"u", "The first vector."},
      {"z", "The third argument."},
      {"b", "The bias."},
      {"f", "The filters, {height, width, input channels, output channels}."},
      {"w", "The weights to normalize."},
      {"xs", "The arguments (a list of Expressions)."},
      {"exprs", "[b, W1, x1, W2, x2, ...]: the bias, then pairs of matrix and vector."},
      {"d", "The dim to work along."},
      {"dim", "The dims of the result (an int for a vector, or a tuple)."},
      {"dims", "The new order of the dims."},
      {"batch_size", "The number of batch elements."},
      {"device", "The device to put the node on ('' or None: the default device)."},
      {"device_str", "The name of the device to copy to, e.g. 'CPU' or 'GPU:0'."},
      {"gradient_mode", "'zero_gradient' or 'straight_through_gradient'."},
      {"index", "The index to take (may be changed later with .set_index())."},
      {"indices", "One index per batch element (may be changed later with .set_index())."},
      {"update", "Whether the trainer updates the table from this lookup's gradient (False: a constant)."},
      {"vs", "One index per batch element."},
      {"m", "The margin."},
      {"r", "The order of the moment."},
      {"n", "The count to divide by; 0: the number of values reduced."},
      {"k", "How many values to keep."},
      {"x_t", "The input at time t."},
      {"h_tm1", "The hidden state at time t-1."},
      {"c_tm1", "The cell state at time t-1."},
      {"c_t", "The cell state at time t."},
      {"gates_t", "The gates from vanilla_lstm_gates."},
      {"Wx", "The input weight matrix (4 gates stacked)."},
      {"Wh", "The recurrent weight matrix (4 gates stacked)."},
      {"weightnoise_std", "The standard deviation of Gaussian noise added to the weights (0: none)."},
      {"dropout_mask_x", "The dropout mask of the input."},
      {"dropout_mask_h", "The dropout mask of the hidden state."},
      {"stride", "The (vertical, horizontal) stride."},
      {"ksize", "The (height, width) of the pooling window."},
      {"is_valid", "True: no padding ('VALID'); False: zero padding that keeps the size ('SAME')."},
      {"nrows", "How many consecutive rows are summed into one."},
      {"arr", "The values: a numpy array (any dtype and layout) or nested lists; a list of arrays is a batch."},
      {"batched", "Whether the last axis is the batch."},
      {"reusable_expr", "Accepted for compatibility with DyNet's Python module (every input here can be .set())."},
      {"d1", "The number of rows."},
      {"d2", "The number of columns."},
      {"idx", "The index of the 1 (or one index per batch element)."},
      {"idxs", "For each axis of `shape`, the indices of the given values along it."},
      {"values", "The values at those indices."},
      {"shape", "The dims of the tensor (the last one is the batch when batched)."},
      {"defval", "The value everywhere else."},
      {"restrict", "Only these indices take part (the others become -inf); None: all."},
      {"log_lambda", "The log of the Poisson rate λ."},
      {"scale", "The value of the ones."},
      {"mu", "The location μ."},
      {"mean", "The mean."},
      {"left", "The lower bound."},
      {"right", "The upper bound."},
      {"lambd", "The factor λ applied to the gradient."},
      {"cs", "The columns to take."},
      {"rs", "The rows to take."},
      {"strides", "The stride on each dim."},
      {"range_from", "The first index on each dim."},
      {"range_to", "The end (exclusive) on each dim."},
      {"alpha", "The α of the negative part."},
      {"beta", "The β."},
      {"stddev", "The standard deviation."},
      {"val", "The value of every element."},
      {"c", "The constant."},
      {"s", "The start."},
      {"v", "The index, or the second argument."},
      {"p", "The probability."},
      {"g", "The gain."},
  };
  auto it = by_op.find(fn + "." + name);
  if (it != by_op.end()) return it->second;
  it = by_name.find(name);
  return it == by_name.end() ? "" : it->second;
}

// Types of the custom entries' arguments (the module converts them itself), for the docstrings.
const char* custom_type(const std::string& name) {
  static const std::unordered_map<std::string, const char*> t = {
      {"arr", "numpy.ndarray | list"}, {"v", "collections.abc.Sequence[float]"}, {"d", "collections.abc.Sequence[int]"},
      {"idxs", "collections.abc.Sequence[collections.abc.Sequence[int]]"}, {"values", "collections.abc.Sequence[float]"},
      {"shape", "collections.abc.Sequence[int]"}, {"batched", "bool"}, {"reusable_expr", "bool"}, {"device", "str"},
      {"defval", "float"}, {"s", "float"}, {"dim", "int"}, {"d1", "int"}, {"d2", "int"}};
  auto it = t.find(name);
  return it == t.end() ? "object" : it->second;
}

// Summaries of the entries the module converts itself (their op, input_ptr, says only where values come from).
const char* custom_summary(const std::string& name) {
  static const std::unordered_map<std::string, const char*> t = {
      {"inputTensor", "An input of any dims from a numpy array (or nested lists); its values can be changed with .set()."},
      {"inputVector", "An input vector from a list or array of numbers; its values can be changed with .set()."},
      {"vecInput", "An input vector of zeros of the given length, to be filled with .set()."},
      {"scalarInput", "An input scalar (dims {1}); its value can be changed with .set()."},
      {"inputMatrix", "An input matrix from column-major values; they can be changed with .set()."},
      {"matInput", "An input matrix of zeros, to be filled with .set()."},
      {"sparse_inputTensor", "An input tensor given by its nonzero values (the others are defval)."}};
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

// One Python parameter as documented: its name, the union of its types over the overloads, and its
// first default (as written in the entry).
struct DocParam {
  std::string name;
  std::vector<std::string> types;
  std::string def;
};

// The Google-style docstring of a Python op name (Args / Returns, read by Sphinx's napoleon and IDEs).
std::string op_docstring(const std::string& name, const std::vector<std::pair<const ApiFn*, ApiSpec>>& entries) {
  std::vector<DocParam> params;
  std::vector<std::string> maths;
  for (const auto& [f, spec] : entries) {
    const char* math = f->op ? op_def(op_id(f->op)).doc : nullptr;
    if (math && *math && std::find(maths.begin(), maths.end(), math) == maths.end()) maths.push_back(math);
    std::vector<int> explicit_params;
    for (unsigned k = 0; k < f->ntypes; ++k)
      if (f->types[k] != ApiType::Graph) explicit_params.push_back(static_cast<int>(k));
    size_t next = 0;
    for (const ApiParamSpec& p : spec.params) {
      std::string type;
      if (spec.custom) type = custom_type(p.name);
      else if (p.name == "batch_size" || p.role == "ignored") type = "int";
      else if (next < explicit_params.size()) type = py_type(f->types[explicit_params[next++]]);
      else type = p.def == "None" ? "None" : (p.def == "True" || p.def == "False") ? "bool" : "object";
      auto it = std::find_if(params.begin(), params.end(), [&](const DocParam& d) { return d.name == p.name; });
      if (it == params.end()) {
        params.push_back({p.name, {}, p.def});
        it = params.end() - 1;
      }
      if (std::find(it->types.begin(), it->types.end(), type) == it->types.end()) it->types.push_back(type);
      if (it->def.empty()) it->def = p.def;
    }
  }
  std::string doc;
  if (const char* s = custom_summary(name)) doc = s;
  else if (!maths.empty()) doc = "Computes " + maths[0] + ".";
  else doc = name + ".";
  if (maths.size() > 1) {
    doc += "\n\nBy overload (the arguments pick one):\n";
    for (const std::string& m : maths) doc += "\n- " + m;
  }
  doc += "\n\nArgs:";
  for (const DocParam& p : params) {
    std::string types;
    for (const std::string& t : p.types) types += (types.empty() ? "" : " | ") + t;
    doc += "\n    " + p.name + " (" + types + "): " + param_description(name, p.name);
    if (!p.def.empty()) doc += std::string(doc.back() == ':' ? "" : " ") + "Defaults to " + p.def + ".";
  }
  doc += "\n\nReturns:\n    Expression: the result, a new node of the current graph (computed lazily, when a value "
         "or a gradient is asked for).";
  return doc;
}

}  // namespace

// Registered by name in module.cc: Python functions whose arguments the module converts itself ("@name").
std::unordered_map<std::string, nb::object>& custom_ops();

void init_ops(nb::module_& m) {
  nb::object literal_eval = nb::module_::import_("ast").attr("literal_eval");
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<Overload>> by_name;
  std::unordered_map<std::string, std::vector<std::string>> stubs;
  std::unordered_map<std::string, std::vector<std::pair<const ApiFn*, ApiSpec>>> documented;
  for (const ApiFn& f : api_registry()) {
    if (!f.py) continue;
    const ApiSpec spec = parse_api_spec(f.py);
    Overload ov{&f, {}, f.cpp ? parse_api_spec(f.cpp).params : std::vector<ApiParamSpec>(f.ntypes), -1};
    std::vector<int> explicit_params;
    for (unsigned k = 0; k < f.ntypes; ++k) {
      if (f.types[k] == ApiType::Dim) ov.dim_param = static_cast<int>(k);
      if (f.types[k] != ApiType::Graph) explicit_params.push_back(static_cast<int>(k));
    }
    size_t next = 0;
    for (const ApiParamSpec& p : spec.params) {
      PyParam pp{p.name, p.def.empty() ? nb::object() : literal_eval(nb::str(p.def.c_str())), -1};
      if (p.name == "batch_size")
        pp.cpp = -2;
      else if (p.role == "ignored")
        pp.cpp = -3;
      else if (next < explicit_params.size())
        pp.cpp = explicit_params[next++];
      ov.params.push_back(std::move(pp));
    }
    if (by_name.find(spec.name) == by_name.end()) order.push_back(spec.name);
    stubs[spec.name].push_back(stub_line(spec.name, ov, spec, nullptr));
    documented[spec.name].emplace_back(&f, spec);
    if (!spec.custom) by_name[spec.name].push_back(std::move(ov));
    else by_name[spec.name];  // the module's own function; its signature still comes from here
  }
  for (const std::string& name : order) {
    std::vector<std::string> lines = stubs[name];
    std::string sig;
    // Overloads with one Python signature (e.g. log_softmax's two C++ functions) show it once.
    std::vector<std::string> unique;
    for (const std::string& l : lines)
      if (std::find(unique.begin(), unique.end(), l) == unique.end()) unique.push_back(l);
    for (size_t k = 0; k < unique.size(); ++k)
      sig += (unique.size() > 1 ? "@typing.overload\n" : "") + unique[k] + (k + 1 < unique.size() ? "\n" : "");
    auto& overloads = by_name[name];
    PyObject* impl = nullptr;
    if (overloads.empty()) {
      auto it = custom_ops().find(name);
      if (it == custom_ops().end()) throw std::logic_error("dynet: no Python binding for the custom entry " + name);
      impl = it->second.inc_ref().ptr();
    }
    PyOp* op = PyObject_New(PyOp, op_type());
    if (!op) throw nb::python_error();
    op->vectorcall = op_vectorcall;
    op->overloads = new std::vector<Overload>(std::move(overloads));
    op->name = PyUnicode_FromString(name.c_str());
    op->signature = PyUnicode_FromString(sig.c_str());
    const std::string doc = op_docstring(name, documented[name]);
    op->doc = PyUnicode_FromString(doc.c_str());
    op->impl = impl;
    m.attr(name.c_str()) = nb::steal(reinterpret_cast<PyObject*>(op));
  }
}

}  // namespace dynet::py
