// DyNet's leaf node names (dynet/param-nodes.h): parameters, inputs and lookups, usable with
// ComputationGraph::add_function<Name>(...) like the other built-in names (dynet/nodes-macros.h);
// they call the graph's add_parameters / add_input / add_lookup.
#pragma once

#include <vector>

#include "dynet/nodes-macros.h"

namespace dynet {

// DyNet's common base of parameter nodes; here only a name.
struct ParameterNodeBase : detail::BuiltinNode {};

struct ParameterNode : ParameterNodeBase {
  static VariableIndex add_to(ComputationGraph& g, const Parameter& p) { return g.add_parameters(p); }
  static VariableIndex add_to(ComputationGraph& g, const LookupParameter& p) { return g.add_parameters(p); }
};
struct ConstParameterNode : ParameterNodeBase {
  static VariableIndex add_to(ComputationGraph& g, const Parameter& p) { return g.add_const_parameters(p); }
  static VariableIndex add_to(ComputationGraph& g, const LookupParameter& p) { return g.add_const_parameters(p); }
};
struct InputNode : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, const Dim& d, const std::vector<float>& data) {
    return g.add_input(d, data);
  }
  static VariableIndex add_to(ComputationGraph& g, const Dim& d, const std::vector<float>* pdata) {
    return g.add_input(d, pdata);
  }
};
struct SparseInputNode : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, const Dim& d, const std::vector<unsigned>& ids,
                              const std::vector<float>& data, float defdata = 0.f) {
    return g.add_input(d, ids, data, defdata);
  }
};
struct ScalarInputNode : detail::BuiltinNode {
  static VariableIndex add_to(ComputationGraph& g, real s) { return g.add_input(s); }
  static VariableIndex add_to(ComputationGraph& g, const real* ps) { return g.add_input(ps); }
};
struct LookupNode : ParameterNodeBase {
  template <class Index>
  static VariableIndex add_to(ComputationGraph& g, const LookupParameter& p, const Index& index) {
    return g.add_lookup(p, index);
  }
};

}  // namespace dynet
