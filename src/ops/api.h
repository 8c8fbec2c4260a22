// The public signatures of the expression functions, one source for every face of the API.
//
// Each public function (a C++ overload of expr.h, a Python function of `dynet`, or both) is one ApiFn,
// declared with DYNET_API right after the function's definition in its src/ops file:
//
//   Expression pick(const Expression& x, unsigned v, unsigned d) { ... }
//   DYNET_API(pick, "pick", "pick(x, v: payload, d = 0)", "pick(e, index=0, dim=0)",
//             Expression(const Expression&, unsigned, unsigned));
//
// - the parameter types come from the function type (the last argument), which must name an existing
//   overload, so the entry cannot drift from the code;
// - the C++ spec gives the expr.h name, parameter names, roles (`: payload` = per-instance data that a
//   batched node concatenates, e.g. lookup/pick indices; other non-expression parameters are attributes
//   that batched nodes must share) and default values; nullptr: not in expr.h (a Python-only adapter);
// - the Python spec gives the `dynet` name, parameter names and defaults (Python literals), mapped in order
//   onto the parameters other than ComputationGraph& (the current graph) and Device* (Python's
//   `device=""`); a Python `batch_size` sets the batch of the Dim parameter; a trailing Python-only
//   parameter selects the entry when the caller passes the value written in the spec (`update=False`
//   picks const_lookup), unless written `name: ignored=0`: an int the original's Python takes and discards
//   (sum_dim's n); trailing C++ parameters missing in Python take their C++ defaults. "@name(...)":
//   the Python module converts the arguments itself (numpy arrays, updatable inputs). nullptr: C++ only.
//   A function may have several entries (several Python names); only one of them gives the C++ spec.
// From these entries tests/test_api.cc generates expr.h's declarations and docs/ops.md (and fails when
// either is stale), and the Python module builds its functions at import (python/src/ops.cc), so its
// stubs (stubgen) carry the same names, types and defaults.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "core/op.h"
#include "dynet/expr.h"

namespace dynet {

// Parameter types an API function may take.
enum class ApiType : uint8_t {
  Graph, Device, Expr, ExprList, ExprInitList, Real, Unsigned, Int, Bool, Dim, RealVec, UnsignedVec,
  IntVec, UnsignedVecVec, GradMode, Param, LookupParam, RealPtr, UnsignedPtr, RealVecPtr, UnsignedVecPtr,
  UnsignedVecVecPtr,
};
// The C++ spelling of each type in expr.h.
const char* api_cpp_type(ApiType t);
// Whether a value of the type can come from Python. Pointer forms are read at forward; Python gives
// index pointers into per-graph storage (so `.set()` can change a lookup's or pick's index), the other
// pointer forms are C++ only.
constexpr bool api_from_python(ApiType t) {
  return t != ApiType::ExprInitList && t != ApiType::RealPtr && t != ApiType::RealVecPtr &&
         t != ApiType::UnsignedVecVecPtr;
}

template <class T> struct ApiTypeOf;
#define DYNET_API_TYPE(T, CODE) \
  template <> struct ApiTypeOf<T> { static constexpr ApiType value = ApiType::CODE; };
DYNET_API_TYPE(ComputationGraph&, Graph)
DYNET_API_TYPE(Device*, Device)
DYNET_API_TYPE(const Expression&, Expr)
DYNET_API_TYPE(const std::vector<Expression>&, ExprList)
DYNET_API_TYPE(const std::initializer_list<Expression>&, ExprInitList)
DYNET_API_TYPE(float, Real)
DYNET_API_TYPE(unsigned, Unsigned)
DYNET_API_TYPE(int, Int)
DYNET_API_TYPE(bool, Bool)
DYNET_API_TYPE(const Dim&, Dim)
DYNET_API_TYPE(const std::vector<float>&, RealVec)
DYNET_API_TYPE(const std::vector<unsigned>&, UnsignedVec)
DYNET_API_TYPE(const std::vector<int>&, IntVec)
DYNET_API_TYPE(const std::vector<std::vector<unsigned>>&, UnsignedVecVec)
DYNET_API_TYPE(GradientMode, GradMode)
DYNET_API_TYPE(Parameter, Param)
DYNET_API_TYPE(LookupParameter, LookupParam)
DYNET_API_TYPE(const float*, RealPtr)
DYNET_API_TYPE(const unsigned*, UnsignedPtr)
DYNET_API_TYPE(const std::vector<float>*, RealVecPtr)
DYNET_API_TYPE(const std::vector<unsigned>*, UnsignedVecPtr)
DYNET_API_TYPE(const std::vector<std::vector<unsigned>>*, UnsignedVecVecPtr)
#undef DYNET_API_TYPE

using ApiRawFn = void (*)();
// Calls fn with args[k] pointing at a value of parameter k's decayed type.
using ApiInvoker = Expression (*)(ApiRawFn fn, void* const* args);

struct ApiFn {
  const char* cpp;   // C++ spec, or nullptr
  const char* py;    // Python spec, or nullptr
  const char* op;    // the op (registry name) of the node the function returns
  const char* file;  // the defining file (groups expr.h and docs/ops.md)
  const ApiType* types;
  unsigned ntypes;
  ApiRawFn fn;
  ApiInvoker invoke;  // nullptr when some parameter cannot come from Python
};

std::vector<ApiFn>& api_registry();

template <class Sig> struct ApiSig;
template <class... P>
struct ApiSig<Expression(P...)> {
  static constexpr ApiType types[sizeof...(P) + 1] = {ApiTypeOf<P>::value..., ApiType::Graph};
  static constexpr bool from_python = (api_from_python(ApiTypeOf<P>::value) && ...);
  template <size_t... I>
  static Expression call(ApiRawFn fn, void* const* a, std::index_sequence<I...>) {
    return reinterpret_cast<Expression (*)(P...)>(fn)(*static_cast<std::remove_cvref_t<P>*>(a[I])...);
  }
  static Expression invoke(ApiRawFn fn, void* const* a) { return call(fn, a, std::index_sequence_for<P...>{}); }
};

struct ApiRegistration {
  // An entry with neither spec (an internal table row, see ops::public_name) is not registered.
  explicit ApiRegistration(const ApiFn& f) {
    if (f.cpp || f.py) api_registry().push_back(f);
  }
};

template <class Sig>
ApiFn api_fn(Sig* f, const char* op, const char* cpp, const char* py, const char* file) {
  using S = ApiSig<Sig>;
  constexpr unsigned n = sizeof(S::types) / sizeof(ApiType) - 1;
  return {cpp, py, op, file, S::types, n, reinterpret_cast<ApiRawFn>(f), S::from_python ? &S::invoke : nullptr};
}

#define DYNET_API_CAT2(a, b) a##b
#define DYNET_API_CAT(a, b) DYNET_API_CAT2(a, b)
#define DYNET_API(FN, OP, CPP, PY, ...)                                                                 \
  static const ::dynet::ApiRegistration DYNET_API_CAT(dynet_api_, __LINE__)(                           \
      ::dynet::api_fn<__VA_ARGS__>(FN, OP, CPP, PY, __FILE__))

namespace ops {
// The spec itself, or nullptr for an internal function (a name ending in '_', e.g. the negate_ row of
// unary.cc's table, public as operator-): lets table macros give every row an entry.
inline const char* public_name(const char* spec) {
  const char* open = spec;
  while (*open && *open != '(') ++open;
  return open > spec && open[-1] == '_' ? nullptr : spec;
}
}  // namespace ops

// A parsed spec: "name(a, b: payload, c = 1)" (C++) or "name(a, b=1)" (Python).
struct ApiParamSpec {
  std::string name, role, def;  // role: "", "payload" or "ignored"; def: "" when there is no default
};
struct ApiSpec {
  bool custom = false;  // Python spec written "@name(...)": the module converts the arguments itself
  std::string name;
  std::vector<ApiParamSpec> params;
};
// Throws std::logic_error naming the spec when it is malformed.
ApiSpec parse_api_spec(const char* spec);

}  // namespace dynet
