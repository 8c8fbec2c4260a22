// Shared declarations of the Python extension (module dynet._dynet).
#pragma once

#include <Python.h>

#include <nanobind/nanobind.h>

#include <climits>
#include <deque>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"

namespace dynet {
class Trainer;
}

namespace dynet::py {
namespace nb = nanobind;

// ---- the graph Python code builds into ----
// What one graph's pointer nodes read at forward: the values of updatable inputs and the indices of
// lookups and picks (which `.set()` changes). Deques, so growing never moves an element a node points
// to; cleared when the graph is renewed (its expressions are stale by then, so `.set()` refuses them).
struct GraphInputs {
  std::deque<std::vector<float>> values;
  std::deque<unsigned> indices;
  std::deque<std::vector<unsigned>> index_lists;
  void clear() {
    values.clear();
    indices.clear();
    index_lists.clear();
  }
};
// DyNet's Python API has one global graph; `with dy.ComputationGraph() as g:` makes another graph
// current for this thread (a thread-local stack).
ComputationGraph& current_graph();
// A `device` argument: None or "" is the default device, else a name such as "CPU" or "GPU:0" (an unknown
// name throws, naming it).
Device* device_from(PyObject* o);
GraphInputs& current_inputs();
void push_graph(ComputationGraph* g, GraphInputs* in);
void pop_graph(ComputationGraph* g);
ComputationGraph& global_graph();
GraphInputs& global_inputs();
uint64_t& global_graph_version();

// ---- computing with the GIL released ----
// Forward, backward, updates, saving and loading run with the GIL released, so Python threads (each
// with its graph: `with dy.ComputationGraph():`) compute in parallel. One graph is computed by one thread
// at a time: a ComputeScope holds the graph from before the computation until the caller, GIL taken
// back, has read the result; what changes or reads a graph under the GIL (adding a node, renew, .set(),
// gradient(), destruction) first waits for it, GIL released (wait_until_idle). While no graph is being
// computed, the wait is one comparison: the graph-construction hot path pays nothing else.
class ComputeScope {
 public:
  explicit ComputeScope(const ComputationGraph* g);  // under the GIL: releases it, then takes g
  ~ComputeScope();                                     // takes the GIL back (unless reacquire did), then frees g
  void reacquire();  // takes the GIL back, g still held: the result may now become Python objects
  ComputeScope(const ComputeScope&) = delete;
  ComputeScope& operator=(const ComputeScope&) = delete;

 private:
  struct GraphUse* use_;
  PyThreadState* released_;
  bool nested_;  // made while this thread reads a result of g (Python code run then)
};
// Under the GIL: returns once no thread computes g (at once when none computes any graph).
void wait_until_idle(const ComputationGraph* g);
extern size_t graphs_in_use;  // graphs with threads computing or waiting for them (read under the GIL)
inline void wait_until_idle_fast(const ComputationGraph* g) {
  if (graphs_in_use != 0) wait_until_idle(g);
}

// ---- Expression objects (a plain CPython type: the hot path avoids nanobind's per-instance map) ----
// What `.set()` writes for an updatable expression: an element of its graph's GraphInputs.
enum class Settable : int { None, Values, Index, Indices };
struct PyExpr {
  PyObject_HEAD
  Expression e;
  void* slot;     // std::vector<float>*, unsigned* or std::vector<unsigned>* (by kind)
  Settable kind;
};
extern PyTypeObject* ExprType;
// dynet.StaleExpressionError: a subclass of ValueError (the original's) and RuntimeError.
extern PyObject* StaleExpressionError;
// The operators + - * / ** and unary minus, for any type to_expr accepts (Parameters too).
PyType_Slot* expression_number_slots();
PyObject* wrap(const Expression& e);
// An expression whose `.set()` writes *slot (an element of its graph's GraphInputs).
PyObject* wrap(const Expression& e, Settable kind, void* slot);
// ---- Parameters and LookupParameters (nanobind classes, module.cc) ----
// P is Parameter or LookupParameter; `cached` is its node in the current graph (DyNet 2.1 adds it on
// first use).
template <class P>
struct PyParams {
  P p;
  Expression cached;
  Expression expr(bool update) {
    ComputationGraph& g = current_graph();
    if (update && !cached.is_stale() && cached.pg == &g) return cached;
    Expression e = update ? parameter(g, p) : const_parameter(g, p);
    if (update) cached = e;
    return e;
  }
};
using PyParameters = PyParams<Parameter>;
using PyLookupParameters = PyParams<LookupParameter>;

// Converts an Expression or a Parameters/LookupParameters object (added to the current graph, as
// DyNet 2.1 does). Returns false, with no Python error set, when `o` is neither.
bool to_expr(PyObject* o, Expression& out);
// The Parameters/LookupParameters hook of to_expr (module.cc).
bool param_to_expr(PyObject* o, Expression& out);
// The Parameter / LookupParameter of a Parameters / LookupParameters object; false if it is not one.
bool to_parameter(PyObject* o, Parameter& out);
bool to_lookup_parameter(PyObject* o, LookupParameter& out);

// ---- numpy (arrays.cc) ----
// An array's dims (numpy order) and its values as float32 in column-major order (DyNet's layout): any
// dtype and memory layout; `what` names the caller in errors.
struct FloatArray {
  std::vector<unsigned> dims;
  std::vector<float> values;
};
FloatArray from_array(nb::handle obj, const char* what);
// A Dim of these dims and batch size; throws std::invalid_argument naming `what` for too many dims.
Dim make_dim(const std::vector<unsigned>& dims, unsigned bd, const char* what);
// A numpy float64 copy (DyNet's dtype): the dims, then the batch as a last axis when bd > 1 (or when
// keep_batch_axis).
// Results held as objects, named for the signatures and stubs (a plain nb::object would show as `object`).
struct NDArrayF64 {  // a float64 numpy array
  nb::object obj;
};
struct ValueResult {  // Expression.value()
  nb::object obj;
};
struct TensorResult {
  nb::object obj;
};
struct GraphResult {
  nb::object obj;
};
// `parameter`: t is a parameter's values or gradient, whose mutex this is: copied between other threads'
// updates and gradient pushes (GIL released while it waits).
nb::object to_numpy(const Tensor& t, bool keep_batch_axis = false, std::mutex* parameter = nullptr);
nb::object to_numpy_float32(const Tensor& t);
// Rows of a lookup table (all, or those listed) as one float64 array of shape (rows, row dims...).
nb::object rows_to_numpy(const Dim& row, const std::vector<Tensor>& rows, const std::vector<unsigned>* which,
                         std::mutex* parameter = nullptr);
// A dy.Tensor holding a copy of t.
nb::object tensor_of(const Tensor& t);

void init_arrays(nb::module_& m);
void init_expression(nb::module_& m);
void init_ops(nb::module_& m);
void init_builders(nb::module_& m);
void init_module(nb::module_& m);
void init_profiler(nb::module_& m);  // dy.profiler() (profiler.cc)

// ---- text through sys.stdout / sys.stderr, which notebooks show (C++ streams bypass them; profiler.cc) ----
void write_stdout(const std::string& text);
void write_stderr(const std::string& text);
std::string graphviz_text(const ComputationGraph& g);
// ComputationGraph::dump, whose text goes to sys.stderr when there is no file name.
void dump_graph(ComputationGraph& g, const std::string& filename, bool show_values, bool show_gradients,
                bool nan_check_only);
// Trainer::status() on sys.stderr.
void trainer_status(Trainer& t);

// Raises the Python exception matching the current C++ exception (inside a catch block).
void raise_from_cpp();

// An int argument (numpy's integers too) in [lo, hi]: a TypeError for anything else, a ValueError out of
// range, each naming `what` (where nb::cast's failure would read "std::bad_cast").
long long int_in_range(nb::handle o, long long lo, long long hi, const char* what);
// The same, for anything with __int__, as DyNet's Cython module took integers: a float truncated, a numpy
// array of one element.
long long int_or_float_in_range(nb::handle o, long long lo, long long hi, const char* what);

// A bool argument as DyNet's Cython module takes one: any object, by its truth value (1, numpy.bool_, None,
// ...), where nanobind's bool accepts True and False only.
struct truthy {
  bool value = false;
  operator bool() const { return value; }
};

// An integer argument as DyNet's Cython module took one: an int, a numpy integer, or anything with __int__
// (a float truncated: `LSTMBuilder(1, 64, 128/2, pc)`, `E[2.0]`), in T's range. Bindings take these where
// nanobind's own int caster would refuse a float.
template <class T>
struct int_arg {
  T value{};
  operator T() const { return value; }
};
// A sequence of them (list, tuple, numpy array, range) as a std::vector<T>.
template <class T>
struct int_list {
  std::vector<T> value;
  operator const std::vector<T>&() const { return value; }
};

}  // namespace dynet::py

namespace nanobind::detail {
template <>
struct type_caster<dynet::py::truthy> {
  NB_TYPE_CASTER(dynet::py::truthy, const_name("bool"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    const int r = PyObject_IsTrue(src.ptr());
    if (r < 0) {
      PyErr_Clear();
      return false;
    }
    value.value = r == 1;
    return true;
  }
  static handle from_cpp(dynet::py::truthy v, rv_policy, cleanup_list*) noexcept { return PyBool_FromLong(v.value); }
};
// None too, as False (Cython's bint takes it): nanobind refuses None before any caster runs unless the
// parameter accepts it, which this makes every truthy parameter do (their stubs read `bool | None`).
template <>
struct has_arg_defaults<dynet::py::truthy> : std::true_type {};
template <class T>
struct type_caster<dynet::py::int_arg<T>> {
  NB_TYPE_CASTER(dynet::py::int_arg<T>, const_name("int"))
  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    // A float waits for the converting pass, so an overload taking a float gets it first.
    if (!(flags & uint8_t(cast_flags::convert)) && !PyIndex_Check(src.ptr())) return false;
    try {  // anything else: not this overload (the caller's TypeError lists the signatures)
      constexpr long long lo = std::is_signed_v<T> ? (long long)std::numeric_limits<T>::min() : 0;
      constexpr long long hi = (unsigned long long)std::numeric_limits<T>::max() > (unsigned long long)LLONG_MAX
                                   ? LLONG_MAX : (long long)std::numeric_limits<T>::max();
      value.value = static_cast<T>(dynet::py::int_or_float_in_range(src, lo, hi, "int"));
      return true;
    } catch (...) {
      PyErr_Clear();
      return false;
    }
  }
  static handle from_cpp(dynet::py::int_arg<T> v, rv_policy, cleanup_list*) noexcept {
    return PyLong_FromLongLong((long long)v.value);
  }
};
template <class T>
struct type_caster<dynet::py::int_list<T>> {
  NB_TYPE_CASTER(dynet::py::int_list<T>, const_name("collections.abc.Sequence[int]"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    PyObject* o = src.ptr();
    if (PyUnicode_Check(o) || PyBytes_Check(o) || !PySequence_Check(o)) return false;
    object seq = steal(PySequence_Fast(o, ""));
    if (!seq.is_valid()) {
      PyErr_Clear();
      return false;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    value.value.clear();
    value.value.reserve(size_t(n));
    make_caster<dynet::py::int_arg<T>> item;
    for (Py_ssize_t k = 0; k < n; ++k) {
      if (!item.from_python(items[k], flags, cleanup)) return false;
      value.value.push_back(item.value);
    }
    return true;
  }
};
// Expression <-> dynet._dynet.Expression (and Parameters objects as arguments).
template <>
struct type_caster<dynet::Expression> {
  NB_TYPE_CASTER(dynet::Expression, const_name("Expression"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept { return dynet::py::to_expr(src.ptr(), value); }
  static handle from_cpp(const dynet::Expression& e, rv_policy, cleanup_list*) noexcept {
    return dynet::py::wrap(e);
  }
};
}  // namespace nanobind::detail

namespace nanobind::detail {
#define DYNET_PY_NAMED_OBJECT(T, NAME)                                                                         \
  template <>                                                                                                   \
  struct type_caster<dynet::py::T> {                                                                            \
    NB_TYPE_CASTER(dynet::py::T, const_name(NAME))                                                              \
    bool from_python(handle, uint8_t, cleanup_list*) noexcept { return false; }                                 \
    static handle from_cpp(const dynet::py::T& v, rv_policy, cleanup_list*) noexcept { return v.obj.inc_ref(); } \
  };
DYNET_PY_NAMED_OBJECT(NDArrayF64, "numpy.typing.NDArray[numpy.float64]")
DYNET_PY_NAMED_OBJECT(ValueResult, "float | list[float] | numpy.typing.NDArray[numpy.float64]")
DYNET_PY_NAMED_OBJECT(TensorResult, "dynet._dynet.Tensor")
DYNET_PY_NAMED_OBJECT(GraphResult, "dynet._dynet.ComputationGraph")
#undef DYNET_PY_NAMED_OBJECT
}  // namespace nanobind::detail
