// docs/ops.md is generated from the registry; this test fails when it is out of date.
//   DYNET_UPDATE_DOCS=1 build/tests/dynet_tests --gtest_filter=OpRegistry.DocsAreCurrent   rewrites it
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/op.h"
#include "ops/sample.h"
#include "ops/api.h"
#include "dynet/expr.h"

namespace dynet {
namespace {

// "{2,3} {3} -> {2}" for the first good sample, computed by building it.
std::string example_shapes(const OpDef& def) {
  if (!def.samples) return "";
  for (const OpSample& s : def.samples()) {
    if (s.bad) continue;
    ComputationGraph g;
    std::vector<Expression> xs;
    std::ostringstream os;
    for (const Dim& d : s.inputs) {
      xs.push_back(input(g, d, std::vector<float>(d.size(), 0.5f)));
      os << d << ' ';
    }
    try {
      os << "→ " << s.build(g, xs).dim();
    } catch (const std::exception&) {
      continue;
    }
    return os.str();
  }
  return "";
}

std::string batch_behaviour(const OpDef& def) {
  if (!def.batch.batchable) return std::string("runs alone: ") + def.batch.why_not;
  std::string r = "batchable";
  if (def.batch.shared) {
    r += " (shared args:";
    for (unsigned i = 0; i < 8; ++i)
      if (def.batch.is_shared(i)) r += " " + std::to_string(i);
    r += def.batch.shared >> 8 ? " ...)" : ")";
  }
  if (def.batch.merge) r += ", per-instance attributes merged";
  return r;
}

std::string gradient(const OpDef& def) {
  if (def.flags & kNoGradient) return "none (constant)";
  if (def.flags & kParameterNode) return "to parameter, checked";
  if (!def.backward) return def.flags & kAliasOutput ? "n/a (leaf)" : "none (leaf)";
  return "checked";
}

// The public functions that create the op (from the API entries): C++ and Python names.
std::string functions(const OpDef& def, bool python) {
  std::vector<std::string> names;
  for (const ApiFn& f : api_registry()) {
    const char* spec = python ? f.py : f.cpp;
    if (!spec || !f.op || std::string(f.op) != def.name) continue;
    const std::string n = "`" + parse_api_spec(spec).name + "`";
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string generate() {
  std::ostringstream os;
  os << "# Operations\n\nGenerated from the op registry by `tests/test_ops_doc.cc` (do not edit by hand):\n"
        "`DYNET_UPDATE_DOCS=1 build/tests/dynet_tests --gtest_filter=OpRegistry.DocsAreCurrent`.\n"
        "Every op below is run by the generic harness (`tests/test_ops.cc`) on each of its samples: shape rule vs "
        "value, finite-difference gradients of every input and parameter, gradient accumulation, and bad shapes "
        "throwing an error that names the op; for a batchable op, several instances of each sample in one graph "
        "under autobatching against the simple executor (equal values and gradients). A batchable op's "
        "arguments are concatenated across the members of a batch except the shared ones listed.\n\n"
        "C++ and Python columns list the public functions whose result is the op's node (from the API entries, "
        "src/ops/api.h; Python names are `dynet`'s).\n\n"
        "| op | math | C++ | Python | example shapes | batch rule | gradient | samples |\n|---|---|---|---|---|---|---|---|\n";
  for (const OpDef& d : op_registry()) {
    if (!d.name || std::string(d.name).rfind("harness_", 0) == 0) continue;
    const size_t n = d.samples ? d.samples().size() : 0;
    os << "| `" << d.name << "` | " << (d.doc ? d.doc : "") << " | " << functions(d, false) << " | " << functions(d, true) << " | " << example_shapes(d) << " | "
       << batch_behaviour(d) << " | " << gradient(d) << " | " << n << " |\n";
  }
  return os.str();
}

TEST(OpRegistry, DocsAreCurrent) {
  const std::string path = std::string(DYNET_SOURCE_DIR) + "/docs/ops.md";
  const std::string fresh = generate();
  if (std::getenv("DYNET_UPDATE_DOCS")) {
    std::ofstream(path) << fresh;
    return;
  }
  std::ifstream in(path);
  std::stringstream current;
  current << in.rdbuf();
  EXPECT_EQ(current.str(), fresh) << path << " is out of date; regenerate it with DYNET_UPDATE_DOCS=1 "
                                  << "build/tests/dynet_tests --gtest_filter=OpRegistry.DocsAreCurrent";
}

}  // namespace
}  // namespace dynet
