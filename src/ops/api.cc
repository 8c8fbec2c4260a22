#include "ops/api.h"

#include <cctype>
#include <stdexcept>

namespace dynet {

// Constant-initialized, like the op registry: registrations from other files' static initializers
// never see it unconstructed.
constinit std::vector<ApiFn> g_api_registry;
std::vector<ApiFn>& api_registry() { return g_api_registry; }

const char* api_cpp_type(ApiType t) {
  switch (t) {
    case ApiType::Graph: return "ComputationGraph&";
    case ApiType::Device: return "Device*";
    case ApiType::Expr: return "const Expression&";
    case ApiType::ExprList: return "const std::vector<Expression>&";
    case ApiType::ExprInitList: return "const std::initializer_list<Expression>&";
    case ApiType::Real: return "float";
    case ApiType::Unsigned: return "unsigned";
    case ApiType::Int: return "int";
    case ApiType::Bool: return "bool";
    case ApiType::Dim: return "const Dim&";
    case ApiType::RealVec: return "const std::vector<float>&";
    case ApiType::UnsignedVec: return "const std::vector<unsigned>&";
    case ApiType::IntVec: return "const std::vector<int>&";
    case ApiType::UnsignedVecVec: return "const std::vector<std::vector<unsigned>>&";
    case ApiType::GradMode: return "GradientMode";
    case ApiType::Param: return "Parameter";
    case ApiType::LookupParam: return "LookupParameter";
    case ApiType::RealPtr: return "const float*";
    case ApiType::UnsignedPtr: return "const unsigned*";
    case ApiType::RealVecPtr: return "const std::vector<float>*";
    case ApiType::UnsignedVecPtr: return "const std::vector<unsigned>*";
    case ApiType::UnsignedVecVecPtr: return "const std::vector<std::vector<unsigned>>*";
  }
  return "?";
}

namespace {
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}
}  // namespace

ApiSpec parse_api_spec(const char* spec) {
  const std::string s = spec ? spec : "";
  auto fail = [&](const std::string& why) -> ApiSpec {
    throw std::logic_error("API spec \"" + s + "\": " + why);
  };
  const size_t open = s.find('('), close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || trim(s.substr(close + 1)) != "")
    return fail("expected name(parameters)");
  ApiSpec out;
  out.name = trim(s.substr(0, open));
  if (!out.name.empty() && out.name[0] == '@') {
    out.custom = true;
    out.name = trim(out.name.substr(1));
  }
  if (out.name.empty()) return fail("no name");
  // Split the parameters on top-level commas (defaults may be lists: "dims = {1, 0}", "dims=[1, 0]").
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (size_t i = open + 1; i < close; ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !parts.empty()) parts.push_back(cur);
  for (const std::string& raw : parts) {
    ApiParamSpec p;
    std::string t = trim(raw);
    const size_t eq = t.find('=');
    if (eq != std::string::npos) {
      p.def = trim(t.substr(eq + 1));
      t = trim(t.substr(0, eq));
      if (p.def.empty()) return fail("empty default for '" + t + "'");
    }
    const size_t colon = t.find(':');
    if (colon != std::string::npos) {
      p.role = trim(t.substr(colon + 1));
      t = trim(t.substr(0, colon));
      if (p.role != "payload" && p.role != "ignored")
        return fail("unknown role '" + p.role + "' (only 'payload' or 'ignored')");
    }
    p.name = t;
    if (p.name.empty()) return fail("a parameter without a name");
    for (char c : p.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return fail("bad parameter name '" + p.name + "'");
    out.params.push_back(p);
  }
  return out;
}

}  // namespace dynet
