// The API schema (src/ops/api.h): every entry is well formed, and expr.h's declarations are generated
// from it. This test fails when expr.h is out of date;
//   DYNET_UPDATE_DOCS=1 build/tests/dynet_tests --gtest_filter='Api.*:OpRegistry.*'   rewrites it (and docs/ops.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "ops/api.h"

namespace dynet {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "src/ops/select.cc" from __FILE__ (absolute or relative, any build folder).
std::string source_path(const char* file) {
  const std::string f = file;
  const size_t at = f.rfind("src/");
  return at == std::string::npos ? f : f.substr(at);
}

// Sections of the generated part, in reading order; other files follow alphabetically.
int file_rank(const std::string& path) {
  static const char* order[] = {"input", "arith", "unary", "math", "matmul", "softmax", "losses", "select",
                                "reduce", "flow", "conv", "contract", "linalg", "norm", "lstm_nodes"};
  for (int i = 0; i < int(std::size(order)); ++i)
    if (path == std::string("src/ops/") + order[i] + ".cc") return i;
  return int(std::size(order));
}

std::string declaration(const ApiFn& f) {
  const ApiSpec s = parse_api_spec(f.cpp);
  std::string d = "Expression " + s.name + "(";
  for (size_t k = 0; k < s.params.size(); ++k) {
    if (k) d += ", ";
    d += std::string(api_cpp_type(f.types[k])) + " " + s.params[k].name;
    if (!s.params[k].def.empty()) d += " = " + s.params[k].def;
  }
  d += ");";
  if (f.op) {
    const char* doc = op_def(op_id(f.op)).doc;
    if (doc && *doc) d += "  // " + std::string(doc);
  }
  return d;
}

// The generated part of expr.h: every entry with a C++ spec, grouped by defining file.
std::string generated_declarations() {
  std::vector<const ApiFn*> fns;
  for (const ApiFn& f : api_registry())
    if (f.cpp) fns.push_back(&f);
  std::stable_sort(fns.begin(), fns.end(), [](const ApiFn* a, const ApiFn* b) {
    const std::string fa = source_path(a->file), fb = source_path(b->file);
    const int ra = file_rank(fa), rb = file_rank(fb);
    return ra != rb ? ra < rb : (ra == file_rank("") && fa < fb);
  });
  std::ostringstream os;
  std::string section;
  for (const ApiFn* f : fns) {
    const std::string file = source_path(f->file);
    if (file != section) {
      os << (section.empty() ? "" : "\n") << "// ---- " << file << " ----\n";
      section = file;
    }
    os << declaration(*f) << "\n";
  }
  return os.str();
}

constexpr const char* kBegin = "// ---- BEGIN GENERATED";
constexpr const char* kEnd = "// ---- END GENERATED";

TEST(Api, ExprHeaderIsCurrent) {
  const std::string path = std::string(DYNET_SOURCE_DIR) + "/include/dynet/expr.h";
  const std::string text = read_file(path);
  const size_t b = text.find(kBegin), e = text.find(kEnd);
  ASSERT_NE(b, std::string::npos) << path << " has no '" << kBegin << "' line";
  ASSERT_NE(e, std::string::npos) << path << " has no '" << kEnd << "' line";
  const size_t body = text.find('\n', b) + 1;
  const std::string fresh = text.substr(0, body) + generated_declarations() + text.substr(e);
  if (std::getenv("DYNET_UPDATE_DOCS")) {
    std::ofstream(path) << fresh;
    return;
  }
  EXPECT_EQ(text, fresh) << path << " is out of date; regenerate it with DYNET_UPDATE_DOCS=1 "
                         << "build/tests/dynet_tests --gtest_filter=Api.ExprHeaderIsCurrent";
}

// Checks the mapping rule of api.h between a Python spec and the C++ parameters.
void check_python_mapping(const ApiFn& f, const ApiSpec& py, const std::vector<ApiParamSpec>& cpp) {
  const std::string where = std::string("Python spec ") + f.py + " (" + source_path(f.file) + ")";
  if (py.custom) return;  // the module converts the arguments itself
  ASSERT_NE(f.invoke, nullptr) << where << ": a parameter type cannot come from Python (use @name for a custom binding)";
  std::vector<unsigned> explicit_params;  // C++ parameters a Python argument maps to
  bool has_dim = false;
  for (unsigned k = 0; k < f.ntypes; ++k) {
    if (f.types[k] == ApiType::Graph) continue;
    has_dim |= f.types[k] == ApiType::Dim;
    explicit_params.push_back(k);
  }
  std::vector<ApiParamSpec> positional;
  for (const ApiParamSpec& p : py.params) {
    if (p.name == "batch_size") {
      EXPECT_TRUE(has_dim) << where << ": batch_size without a Dim parameter";
      continue;
    }
    positional.push_back(p);
  }
  for (size_t k = explicit_params.size(); k < positional.size(); ++k)
    EXPECT_FALSE(positional[k].def.empty()) << where << ": Python-only parameter " << positional[k].name
                                            << " needs the value that selects this entry";
  for (size_t k = positional.size(); k < explicit_params.size(); ++k)
    EXPECT_TRUE(f.types[explicit_params[k]] == ApiType::Device || !cpp.at(explicit_params[k]).def.empty())
        << where << ": C++ parameter " << cpp.at(explicit_params[k]).name << " has no Python argument and no default";
}

TEST(Api, EntriesAreWellFormed) {
  std::map<std::string, const ApiFn*> cpp_decls;
  std::map<std::string, std::vector<const ApiFn*>> py_names;
  for (const ApiFn& f : api_registry()) {
    ASSERT_TRUE(f.cpp || f.py) << "an entry of " << source_path(f.file) << " has neither a C++ nor a Python spec";
    if (f.op) EXPECT_NO_THROW(op_id(f.op)) << "entry " << (f.cpp ? f.cpp : f.py) << " names op " << f.op;
    std::vector<ApiParamSpec> cpp;
    if (f.cpp) {
      ApiSpec s;
      ASSERT_NO_THROW(s = parse_api_spec(f.cpp));
      ASSERT_EQ(s.params.size(), f.ntypes) << f.cpp << ": the spec names " << s.params.size()
                                           << " parameters, the function type has " << f.ntypes;
      for (unsigned k = 0; k < f.ntypes; ++k)
        if (f.types[k] == ApiType::Expr || f.types[k] == ApiType::ExprList || f.types[k] == ApiType::Graph)
          EXPECT_EQ(s.params[k].role, "") << f.cpp << ": " << s.params[k].name << " is an argument, not an attribute";
      cpp = s.params;
      const std::string decl = declaration(f);
      EXPECT_TRUE(cpp_decls.emplace(decl.substr(0, decl.find(';')), &f).second) << "declared twice: " << decl;
    } else {
      cpp.resize(f.ntypes);  // a Python-only entry: its C++ function is an adapter
    }
    if (f.py) {
      ApiSpec py;
      ASSERT_NO_THROW(py = parse_api_spec(f.py));
      check_python_mapping(f, py, cpp);
      py_names[py.name].push_back(&f);
    }
  }
  EXPECT_GT(cpp_decls.size(), 150u);
  EXPECT_GT(py_names.size(), 140u);
  // Overloads of one Python name show one signature: their parameter names must agree.
  for (const auto& [name, fns] : py_names) {
    std::vector<std::string> first;
    for (const ApiParamSpec& p : parse_api_spec(fns[0]->py).params) first.push_back(p.name);
    for (const ApiFn* f : fns) {
      std::vector<std::string> names;
      for (const ApiParamSpec& p : parse_api_spec(f->py).params) names.push_back(p.name);
      EXPECT_EQ(names, first) << "Python overloads of " << name << " disagree on parameter names";
    }
  }
}

TEST(Api, ParsesSpecs) {
  const ApiSpec s = parse_api_spec("pick(x, v: payload, d = 0)");
  EXPECT_EQ(s.name, "pick");
  ASSERT_EQ(s.params.size(), 3u);
  EXPECT_EQ(s.params[1].role, "payload");
  EXPECT_EQ(s.params[2].def, "0");
  const ApiSpec t = parse_api_spec("@transpose(x, dims=[1, 0])");
  EXPECT_TRUE(t.custom);
  ASSERT_EQ(t.params.size(), 2u);
  EXPECT_EQ(t.params[1].def, "[1, 0]");
  EXPECT_EQ(parse_api_spec("renew()").params.size(), 0u);
  const ApiSpec u = parse_api_spec("sum_dim(x, d, b=False, n: ignored=0)");
  EXPECT_EQ(u.params[3].role, "ignored");
  EXPECT_EQ(u.params[3].def, "0");
  EXPECT_THROW(parse_api_spec("pick(x, v: attr)"), std::logic_error);
  EXPECT_THROW(parse_api_spec("pick x"), std::logic_error);
  EXPECT_THROW(parse_api_spec("pick(x, = 1)"), std::logic_error);
}

// The thunk calls the very function the entry names, with the converted arguments.
TEST(Api, InvokeCallsTheFunction) {
  const ApiFn* pick_fn = nullptr;
  for (const ApiFn& f : api_registry())
    if (f.py && parse_api_spec(f.py).name == "pick") pick_fn = &f;
  ASSERT_NE(pick_fn, nullptr);
  ComputationGraph g;
  Expression x = input(g, Dim({3}), std::vector<float>{1.f, 2.f, 3.f});
  // Python's pick reads its index through a pointer (so `.set()` can change it)
  ASSERT_EQ(pick_fn->types[1], ApiType::UnsignedPtr);
  unsigned v = 2, d = 0;
  const unsigned* pv = &v;
  void* args[] = {&x, &pv, &d};
  EXPECT_FLOAT_EQ(as_scalar(pick_fn->invoke(pick_fn->fn, args).value()), 3.f);
}

}  // namespace
}  // namespace dynet
