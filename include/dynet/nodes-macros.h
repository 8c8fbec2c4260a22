// Support for DyNet's built-in node names (dynet/nodes-*.h) and for nodes written in DyNet's style
// (the DYNET_NODE_* macros).
//
// DyNet's node names (Tanh, MatrixMultiply, PickNegLogSoftmax, ...) are not Node subclasses here:
// each is a tag whose add_to builds the op of the matching expr.h function, so that
//   Expression y(&cg, cg.add_function<Tanh>({x.i}));
// means tanh(x). Argument counts and indices are checked (std::invalid_argument naming the node);
// the side information is whatever the expr.h function takes after the expressions.
// DYNET_BUILTIN_NODE(Tanh, 1, tanh) declares such a tag: add_function<Tanh>(args, side...) is
// tanh(the 1 argument, side...); arity -1 passes all the arguments as one vector.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/nodes-def-macros.h"
#include "dynet/nodes-impl-macros.h"

namespace dynet {
namespace detail {

// The argument nodes of a built-in node name as expressions; arity < 0: any number but none.
template <class A>
std::vector<Expression> builtin_args(ComputationGraph& g, const A& a, int arity, const char* name) {
  const ArgSpan span = arg_span(a);
  if (arity >= 0 ? span.size != static_cast<size_t>(arity) : span.size == 0)
    throw std::invalid_argument(std::string(name) + ": takes " +
                                (arity >= 0 ? std::to_string(arity) : std::string("at least one")) +
                                " arguments, got " + std::to_string(span.size));
  std::vector<Expression> x;
  x.reserve(span.size);
  for (VariableIndex i : span) {
    if (i >= g.size())
      throw std::invalid_argument(std::string(name) + ": argument node " + std::to_string(i) +
                                  " does not exist (graph has " + std::to_string(g.size()) + " nodes)");
    x.emplace_back(&g, i);
  }
  return x;
}

template <class F, size_t... I, class... S>
VariableIndex call_builtin(F fn, const std::vector<Expression>& x, std::index_sequence<I...>, S&&... side) {
  return fn(x[I]..., std::forward<S>(side)...).i;
}

// A built-in node's op: fn(its Arity argument expressions..., side...), or for Arity -1 fn(all of them
// as a vector, side...).
template <int Arity, class A, class F, class... S>
VariableIndex add_builtin(ComputationGraph& g, const A& a, const char* name, F fn, S&&... side) {
  const std::vector<Expression> x = builtin_args(g, a, Arity, name);
  if constexpr (Arity < 0)
    return fn(x, std::forward<S>(side)...).i;
  else
    return call_builtin(fn, x, std::make_index_sequence<size_t(Arity)>{}, std::forward<S>(side)...);
}

}  // namespace detail
}  // namespace dynet

#define DYNET_BUILTIN_NODE(NAME, ARITY, FN)                                                                        \
  struct NAME : detail::BuiltinNode {                                                                              \
    template <class A, class... S>                                                                                 \
    static VariableIndex add_to(ComputationGraph& g, const A& a, S&&... side) {                                     \
      return detail::add_builtin<ARITY>(                                                                           \
          g, a, #NAME, [](auto&&... e) { return ::dynet::FN(std::forward<decltype(e)>(e)...); },                  \
          std::forward<S>(side)...);                                                                               \
    }                                                                                                              \
  };
