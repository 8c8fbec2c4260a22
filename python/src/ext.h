// Shared declarations of the Python extension (module dynet._dynet).
#pragma once

#include <Python.h>

#include <nanobind/nanobind.h>

#include "dynet/dynet.h"
#include "dynet/expr.h"

namespace dynet::py {
namespace nb = nanobind;

// ---- the graph Python code builds into ----
// DyNet's Python API has one global graph; `with dy.ComputationGraph() as g:` (or
// dy.ComputationGraph.activate) makes another graph current for this thread.
ComputationGraph& current_graph();
void push_graph(ComputationGraph* g);
void pop_graph(ComputationGraph* g);
ComputationGraph& global_graph();
uint64_t& global_graph_version();
// Objects that a graph's pointer inputs read at forward (vecInput's storage, ...): kept until renew_cg.
void keep_alive_for_graph(ComputationGraph& g, std::shared_ptr<void> storage);
void release_graph_storage(ComputationGraph& g);

// ---- Expression objects (a plain CPython type: the hot path avoids nanobind's per-instance map) ----
struct PyExpr {
  PyObject_HEAD
  Expression e;
  std::shared_ptr<void>* storage;  // updatable inputs: the values .set() writes (owned here and by the graph)
  int kind;                        // which .set() applies: 0 none, 1 scalar, 2 vector
};
extern PyTypeObject* ExprType;
PyObject* wrap(const Expression& e);
// Converts an Expression or a Parameters/LookupParameters object (added to the current graph, as
// DyNet 2.1 does). Returns false, with no Python error set, when `o` is neither.
bool to_expr(PyObject* o, Expression& out);
// The Parameters/LookupParameters hook of to_expr (module.cc).
bool param_to_expr(PyObject* o, Expression& out);
// The Parameter / LookupParameter of a Parameters / LookupParameters object; false if it is not one.
bool to_parameter(PyObject* o, Parameter& out);
bool to_lookup_parameter(PyObject* o, LookupParameter& out);

void init_expression(nb::module_& m);
void init_ops(nb::module_& m);
void init_module(nb::module_& m);

// Raises the Python exception matching the current C++ exception (inside a catch block).
void raise_from_cpp();

}  // namespace dynet::py

namespace nanobind::detail {
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
