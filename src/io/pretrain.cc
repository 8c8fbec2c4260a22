#include "dynet/pretrain.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "io/atomic_file.h"
#include "io/text_format.h"

namespace dynet {

namespace {
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> tok;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    size_t e = i;
    while (e < line.size() && !is_blank(line[e])) ++e;
    if (e > i) tok.push_back(line.substr(i, e - i));
    i = e;
  }
  return tok;
}

// (Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.)
std::string quoted(std::string_view w) {
  std::string s(1, '\'');
  s += w;
  s += '\'';
  return s;
}

bool is_count(std::string_view t) {
  unsigned long v;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}
}  // namespace

void save_pretrained_embeddings(const std::string& fname, const Dict& d, const LookupParameter& lp) {
  const LookupParameterStorage& s = lp.get_storage();
  if (d.size() > s.values.size())
    throw std::invalid_argument("save_pretrained_embeddings: the dictionary has " + std::to_string(d.size()) +
                                " words but " + s.name + " only " + std::to_string(s.values.size()) + " rows");
  for (size_t id = 0; id < d.size(); ++id) {
    const std::string& w = d.convert(static_cast<int>(id));
    if (w.empty() || w.find_first_of(" \t\r\n") != std::string::npos)
      throw std::invalid_argument("save_pretrained_embeddings: word " + std::to_string(id) + " ('" + w +
                                  "') is empty or contains white space");
  }
  io_detail::AtomicFileWriter out(fname, "save_pretrained_embeddings");
  const size_t row = s.dim.size();
  std::string line;
  char num[64];
  for (size_t id = 0; id < d.size(); ++id) {
    line = d.convert(static_cast<int>(id));
    const float* v = s.values[id].v;
    for (size_t k = 0; k < row; ++k) {
      line += ' ';
      line.append(num, std::to_chars(num, num + sizeof num, v[k]).ptr);
    }
    line += '\n';
    out.write(line);
  }
  out.commit();
}

void read_pretrained_embeddings(const std::string& fname, Dict& d, std::unordered_map<int, std::vector<float>>& vectors) {
  std::ifstream in(fname, std::ios::binary);
  if (!in) throw std::runtime_error("read_pretrained_embeddings: could not open " + fname);
  auto fail = [&](size_t line_no, const std::string& what) {
    throw std::runtime_error("read_pretrained_embeddings: " + fname + ":" + std::to_string(line_no) + ": " + what);
  };
  std::vector<std::pair<std::string, std::vector<float>>> rows;
  size_t dims = 0, line_no = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    const auto tok = split(line);
    if (tok.empty()) continue;
    if (line_no == 1 && tok.size() == 2 && is_count(tok[0]) && is_count(tok[1])) continue;  // word2vec header
    if (tok.size() < 2) fail(line_no, quoted(tok[0]) + " has no values");
    std::vector<float> v(tok.size() - 1);
    for (size_t k = 1; k < tok.size(); ++k)
      if (!io_detail::parse_float_token(tok[k], &v[k - 1]))
        fail(line_no, "value " + std::to_string(k) + " of " + quoted(tok[0]) + " is not a finite number: " + quoted(tok[k]));
    if (dims == 0) dims = v.size();
    if (v.size() != dims)
      fail(line_no, quoted(tok[0]) + " has " + std::to_string(v.size()) + " values; earlier lines have " +
                        std::to_string(dims));
    rows.emplace_back(std::string(tok[0]), std::move(v));
  }
  if (in.bad()) throw std::runtime_error("read_pretrained_embeddings: read error on " + fname);
  for (auto& [word, v] : rows) {
    if (d.is_frozen() && !d.contains(word)) continue;
    vectors[d.convert(word)] = std::move(v);
  }
}

}  // namespace dynet
