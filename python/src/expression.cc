// The Expression type, the current graph, and the mapping of C++ exceptions to Python ones.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "dynet/except.h"
#include "ext.h"

namespace dynet::py {

// ---------------------------------------------------------------------------------------------
// Graphs. The global graph lives as long as the process; a thread's `with` blocks stack over it.
namespace {
struct Current {
  ComputationGraph* g;
  GraphInputs* in;
};
thread_local std::vector<Current> t_graph_stack;
uint64_t g_version = 0;
}  // namespace

// ---------------------------------------------------------------------------------------------
// Graphs computed with the GIL released (ext.h). The list and the counts are read and written under the
// GIL only; a graph's mutex is taken with the GIL released only, so no thread waits for it holding the GIL.
struct GraphUse {
  const ComputationGraph* graph = nullptr;
  std::mutex computing;  // held by the thread computing the graph, until it has read the result
  int computers = 0;     // threads holding or waiting for `computing` to compute
  int waiters = 0;       // threads waiting for the computers to finish
  // The computer reading its result under the GIL: Python code it runs meanwhile (a finalizer) may use
  // the graph, which that thread holds already.
  std::thread::id reading;
};
namespace {
// The graphs in use (as many as threads at most: a short list), and entries to reuse (never freed: a
// mutex must outlive its last unlock).
std::vector<GraphUse*> g_in_use, g_spare;
GraphUse* find_use(const ComputationGraph* g) {
  for (GraphUse* u : g_in_use)
    if (u->graph == g) return u;
  return nullptr;
}
void forget_if_unused(GraphUse* u) {
  if (u->computers != 0 || u->waiters != 0) return;
  g_in_use.erase(std::find(g_in_use.begin(), g_in_use.end(), u));
  g_spare.push_back(u);
  graphs_in_use = g_in_use.size();
}
}  // namespace
size_t graphs_in_use = 0;

ComputeScope::ComputeScope(const ComputationGraph* g) : released_(nullptr) {
  use_ = find_use(g);
  if (!use_) {
    use_ = g_spare.empty() ? new GraphUse : g_spare.back();
    if (!g_spare.empty()) g_spare.pop_back();
    use_->graph = g;
    g_in_use.push_back(use_);
    graphs_in_use = g_in_use.size();
  }
  nested_ = use_->reading == std::this_thread::get_id();
  if (nested_) return;  // this thread holds g already: compute with the GIL kept
  ++use_->computers;
  released_ = PyEval_SaveThread();
  use_->computing.lock();
}
void ComputeScope::reacquire() {
  if (!released_) return;
  PyEval_RestoreThread(std::exchange(released_, nullptr));
  use_->reading = std::this_thread::get_id();
}
ComputeScope::~ComputeScope() {
  if (nested_) return;
  reacquire();
  use_->reading = {};
  use_->computing.unlock();
  --use_->computers;
  forget_if_unused(use_);
}

void wait_until_idle(const ComputationGraph* g) {
  for (GraphUse* u; (u = find_use(g)) && u->computers != 0 && u->reading != std::this_thread::get_id();) {
    ++u->waiters;
    PyThreadState* released = PyEval_SaveThread();
    u->computing.lock();  // returns once the computer in front has read its result
    u->computing.unlock();
    PyEval_RestoreThread(released);
    --u->waiters;
    forget_if_unused(u);  // and look again: another thread may have started computing g meanwhile
  }
}

// Never freed: expressions may outlive the module.
ComputationGraph& global_graph() {
  static ComputationGraph* g = new ComputationGraph();
  return *g;
}
GraphInputs& global_inputs() {
  static GraphInputs* in = new GraphInputs();
  return *in;
}
uint64_t& global_graph_version() { return g_version; }
ComputationGraph& current_graph() {
  ComputationGraph& g = t_graph_stack.empty() ? global_graph() : *t_graph_stack.back().g;
  wait_until_idle_fast(&g);
  return g;
}
GraphInputs& current_inputs() {
  if (t_graph_stack.empty()) {
    wait_until_idle_fast(&global_graph());
    return global_inputs();
  }
  wait_until_idle_fast(t_graph_stack.back().g);
  return *t_graph_stack.back().in;
}
void push_graph(ComputationGraph* g, GraphInputs* in) { t_graph_stack.push_back({g, in}); }
void pop_graph(ComputationGraph* g) {
  for (size_t k = t_graph_stack.size(); k-- > 0;)
    if (t_graph_stack[k].g == g) {
      t_graph_stack.erase(t_graph_stack.begin() + static_cast<std::ptrdiff_t>(k));
      return;
    }
}

// ---------------------------------------------------------------------------------------------
// Errors: the same message and the same mapping as nanobind's for the bound methods: IndexError
// (std::out_of_range), ValueError (invalid_argument, domain_error, length_error, range_error),
// OverflowError, MemoryError, RuntimeError (everything else).
void raise_from_cpp() {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const stale_expression& e) {
    PyErr_SetString(StaleExpressionError, e.what());
  } catch (const nb::builtin_exception& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.type()) {
      case nb::exception_type::index_error: type = PyExc_IndexError; break;
      case nb::exception_type::value_error: type = PyExc_ValueError; break;
      case nb::exception_type::type_error: type = PyExc_TypeError; break;
      case nb::exception_type::key_error: type = PyExc_KeyError; break;
      default: break;
    }
    PyErr_SetString(type, e.what());
  } catch (const std::out_of_range& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::domain_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::length_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::range_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::overflow_error& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

// ---------------------------------------------------------------------------------------------
// Expression objects. A free list keeps allocation off the hot path (one object per op call).
PyTypeObject* ExprType = nullptr;
PyObject* StaleExpressionError = nullptr;
namespace {
constexpr int kFreeListMax = 4096;
PyExpr* g_free_list[kFreeListMax];
int g_free_count = 0;

void expr_dealloc(PyObject* self) {
  PyExpr* p = reinterpret_cast<PyExpr*>(self);
  if (Py_TYPE(self) == ExprType && g_free_count < kFreeListMax) {
    g_free_list[g_free_count++] = p;
    return;
  }
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}
}  // namespace

PyObject* wrap(const Expression& e) {
  PyExpr* p;
  if (g_free_count > 0) {
    p = g_free_list[--g_free_count];  // still holds its reference to the (heap) type
    Py_SET_REFCNT(reinterpret_cast<PyObject*>(p), 1);
  } else {
    p = PyObject_New(PyExpr, ExprType);
    if (!p) return nullptr;
  }
  p->e = e;
  p->slot = nullptr;
  p->kind = Settable::None;
  return reinterpret_cast<PyObject*>(p);
}

PyObject* wrap(const Expression& e, Settable kind, void* slot) {
  PyObject* o = wrap(e);
  if (o) {
    reinterpret_cast<PyExpr*>(o)->slot = slot;
    reinterpret_cast<PyExpr*>(o)->kind = kind;
  }
  return o;
}

bool to_expr(PyObject* o, Expression& out) {
  if (Py_TYPE(o) == ExprType || PyObject_TypeCheck(o, ExprType)) {
    out = reinterpret_cast<PyExpr*>(o)->e;
    wait_until_idle_fast(out.pg);
    return true;
  }
  return param_to_expr(o, out);
}

long long int_in_range(nb::handle o, long long lo, long long hi, const char* what) {
  if (!PyIndex_Check(o.ptr()))
    throw nb::type_error((std::string(what) + ": expected an int, got " + Py_TYPE(o.ptr())->tp_name).c_str());
  int overflow = 0;
  const nb::object i = nb::steal(PyNumber_Index(o.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow || v < lo || v > hi)
    throw nb::value_error((std::string(what) + ": " + nb::repr(i).c_str() + " is out of range [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "]").c_str());
  return v;
}

long long int_or_float_in_range(nb::handle o, long long lo, long long hi, const char* what) {
  PyObject* p = o.ptr();
  if (PyFloat_Check(p)) {
    const double v = std::trunc(PyFloat_AS_DOUBLE(p));
    if (!(v >= double(lo) && v <= double(hi)))  // NaN too
      throw nb::value_error((std::string(what) + ": " + nb::repr(o).c_str() + " is out of range [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
    return static_cast<long long>(v);
  }
  // Cython took C integers through __int__: numpy's one-element arrays too (numpy < 2 allows it, with its
  // DeprecationWarning), which have an __index__ that refuses them. Strings have no __int__.
  const PyNumberMethods* number = Py_TYPE(p)->tp_as_number;
  if (PyLong_Check(p) || !number || !number->nb_int) return int_in_range(o, lo, hi, what);
  const nb::object i = nb::steal(number->nb_int(p));
  if (!i.is_valid()) throw nb::python_error();
  return int_in_range(i, lo, hi, what);
}

namespace {
// ---- number protocol: the hot path of graph construction ----
bool as_float(PyObject* o, float& v) {
  if (PyFloat_CheckExact(o)) {
    v = static_cast<float>(PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (PyLong_Check(o) || PyFloat_Check(o) || PyIndex_Check(o)) {
    const double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    v = static_cast<float>(d);
    return true;
  }
  // A numpy scalar (np.float32(2.0)): it has a dtype and, unlike an array, is no sequence.
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float && !PySequence_Check(o) &&
      PyObject_HasAttrString(o, "dtype")) {
    const double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    v = static_cast<float>(d);
    return true;
  }
  return false;
}

template <class F>
PyObject* guarded(F&& f) {
  try {
    return wrap(f());
  } catch (...) {
    raise_from_cpp();
    return nullptr;
  }
}

PyObject* nb_add(PyObject* a, PyObject* b) {
  Expression x, y;
  float c;
  if (to_expr(a, x)) {
    if (to_expr(b, y)) return guarded([&] { return x + y; });
    if (as_float(b, c)) return guarded([&] { return x + c; });
  } else if (to_expr(b, y) && as_float(a, c)) {
    return guarded([&] { return c + y; });
  }
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NOTIMPLEMENTED;
}
PyObject* nb_sub(PyObject* a, PyObject* b) {
  Expression x, y;
  float c;
  if (to_expr(a, x)) {
    if (to_expr(b, y)) return guarded([&] { return x - y; });
    if (as_float(b, c)) return guarded([&] { return x - c; });
  } else if (to_expr(b, y) && as_float(a, c)) {
    return guarded([&] { return c - y; });
  }
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NOTIMPLEMENTED;
}
PyObject* nb_mul(PyObject* a, PyObject* b) {
  Expression x, y;
  float c;
  if (to_expr(a, x)) {
    if (to_expr(b, y)) return guarded([&] { return x * y; });
    if (as_float(b, c)) return guarded([&] { return x * c; });
  } else if (to_expr(b, y) && as_float(a, c)) {
    return guarded([&] { return y * c; });
  }
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NOTIMPLEMENTED;
}
// DyNet's Python `/` takes an expression and a number (Expression / Expression raises there).
PyObject* nb_div(PyObject* a, PyObject* b) {
  Expression x, y;
  float c;
  if (to_expr(a, x)) {
    if (as_float(b, c)) return guarded([&] { return x / c; });
    if (to_expr(b, y)) return guarded([&] { return cdiv(x, y); });
  } else if (to_expr(b, y) && as_float(a, c)) {
    return guarded([&] { return c * pow(y, constant(*y.pg, Dim({1}), -1.f)); });
  }
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NOTIMPLEMENTED;
}
PyObject* nb_neg(PyObject* a) {
  Expression x;
  if (!to_expr(a, x)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "expected an Expression");
    return nullptr;
  }
  return guarded([&] { return -x; });
}
PyObject* nb_pow(PyObject* a, PyObject* b, PyObject* mod) {
  Expression x, y;
  float c;
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  if (to_expr(a, x)) {
    if (to_expr(b, y)) return guarded([&] { return pow(x, y); });
    if (as_float(b, c)) return guarded([&] { return pow(x, constant(*x.pg, Dim({1}), c)); });
  } else if (to_expr(b, y) && as_float(a, c)) {
    return guarded([&] { return pow(constant(*y.pg, Dim({1}), c), y); });
  }
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NOTIMPLEMENTED;
}
}  // namespace

PyType_Slot* expression_number_slots() {
  static PyType_Slot slots[] = {{Py_nb_add, reinterpret_cast<void*>(nb_add)},
                                {Py_nb_subtract, reinterpret_cast<void*>(nb_sub)},
                                {Py_nb_multiply, reinterpret_cast<void*>(nb_mul)},
                                {Py_nb_true_divide, reinterpret_cast<void*>(nb_div)},
                                {Py_nb_negative, reinterpret_cast<void*>(nb_neg)},
                                {Py_nb_power, reinterpret_cast<void*>(nb_pow)},
                                {0, nullptr}};
  return slots;
}

void init_expression(nb::module_& m) {
  static std::vector<PyType_Slot> slots = [] {
    std::vector<PyType_Slot> s{{Py_tp_dealloc, reinterpret_cast<void*>(expr_dealloc)},
                               {Py_tp_doc, const_cast<char*>(
                                   "A node of a computation graph (DyNet's Expression).\n\n"
                                   "Made by the op functions (dy.tanh, dy.pick, ...), the operators + - * / ** and "
                                   "indexing; its value is computed lazily by value(), npvalue() or forward().")}};
    for (PyType_Slot* n = expression_number_slots(); n->slot; ++n) s.push_back(*n);
    s.push_back({0, nullptr});
    return s;
  }();
  static PyType_Spec spec = {"dynet._dynet.Expression", sizeof(PyExpr), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                             slots.data()};
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) throw nb::python_error();
  ExprType = reinterpret_cast<PyTypeObject*>(type);
  m.attr("Expression") = nb::handle(type);
  nb::object bases = nb::make_tuple(nb::handle(PyExc_ValueError), nb::handle(PyExc_RuntimeError));
  StaleExpressionError = PyErr_NewExceptionWithDoc(
      "dynet._dynet.StaleExpressionError",
      "An Expression used after renew_cg() or after its graph was destroyed.\n\n"
      "A ValueError, as in the original DyNet, and a RuntimeError.\n\n"
      "Args:\n    args: The message, as for any exception.",
      bases.ptr(), nullptr);
  if (!StaleExpressionError) throw nb::python_error();
  m.attr("StaleExpressionError") = nb::handle(StaleExpressionError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const stale_expression& e) {
      PyErr_SetString(StaleExpressionError, e.what());
    }
  });
}

}  // namespace dynet::py
