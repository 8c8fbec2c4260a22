// DyNet's text model format: TextFileSaver / TextFileLoader.
#include "dynet/io.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/param_lock.h"
#include "io/atomic_file.h"
#include "io/text_format.h"

namespace dynet {

using io_detail::AtomicFileWriter;

namespace {

constexpr const char* kParamTag = "#Parameter#";
constexpr const char* kLookupTag = "#LookupParameter#";
constexpr size_t kValueBytes = 16;  // "%+.8e " of a finite float

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// A record name is one header token.
void check_record_name(const std::string& name, const char* who) {
  if (name.empty() || name == "/")
    throw std::invalid_argument(std::string(who) + ": '" + name + "' is not a valid parameter name or key");
  for (char c : name)
    if (is_space(c) || c == '#')
      throw std::invalid_argument(std::string(who) + ": name or key '" + name +
                                  "' may not contain white space or '#' (the file format cannot hold it)");
}

std::string dim_text(const Dim& d) {
  std::string s = "{";
  for (size_t i = 0; i < d.nd; ++i) {
    if (i) s += ',';
    s += std::to_string(d.d[i]);
  }
  return s + '}';
}

size_t data_bytes(size_t size, bool full_grad) { return (full_grad ? 2 : 1) * (size * kValueBytes + 1); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Saving

struct io_detail::TextRecord {
  bool lookup;
  std::string name;
  Dim dim;
  const float* values;
  const float* grads;  // null: ZERO_GRAD
  float scale;         // the lazy weight-decay factor folded into the saved values
};

namespace {

void write_line(AtomicFileWriter& out, const std::string& name, const float* v, size_t n, float scale) {
  constexpr size_t kChunkValues = 4096;
  std::string chunk(kChunkValues * io_detail::kMaxValueChars + 1, '\0');
  for (size_t begin = 0; begin < n; begin += kChunkValues) {
    const size_t end = std::min(n, begin + kChunkValues);
    char* p = chunk.data();
    for (size_t k = begin; k < end; ++k) {
      const float x = scale == 1.f ? v[k] : v[k] * scale;
      if (!std::isfinite(x))
        throw std::runtime_error("TextFileSaver: " + name + " holds a NaN or infinite value at element " +
                                 std::to_string(k) + "; the text format cannot store it (" + out.target() +
                                 " was left as it was)");
      p = io_detail::format_value(p, x);
    }
    if (end == n) *p++ = '\n';
    out.write(std::string_view(chunk.data(), static_cast<size_t>(p - chunk.data())));
  }
  if (n == 0) out.write("\n");
}

}  // namespace

TextFileSaver::TextFileSaver(const std::string& filename, bool append) : filename_(filename), append_(append) {
  // Fail here, as DyNet did, when the file cannot be written at all (missing or read-only directory).
  AtomicFileWriter probe(filename_, "TextFileSaver");
}

void TextFileSaver::write_records(const io_detail::TextRecord* items, size_t n) {
  AtomicFileWriter out(filename_, "TextFileSaver");
  if (append_ || wrote_once_) out.copy_existing_target();
  for (size_t i = 0; i < n; ++i) {
    const io_detail::TextRecord& it = items[i];
    const size_t size = it.dim.size();
    std::string header = it.lookup ? kLookupTag : kParamTag;
    header += ' ';
    header += it.name;
    header += ' ';
    header += dim_text(it.dim);
    header += ' ';
    header += std::to_string(data_bytes(size, it.grads != nullptr));
    header += it.grads ? " FULL_GRAD\n" : " ZERO_GRAD\n";
    out.write(header);
    write_line(out, it.name, it.values, size, it.scale);
    if (it.grads) write_line(out, it.name, it.grads, size, 1.f);
  }
  out.commit();
  wrote_once_ = true;
}

namespace {
// Savers hold the parameter lock exclusively while they read values and gradients: under its shared
// side, backward calls add to gradients and asynchronous updates write values (each under the
// parameter's own mutex only), so a saver sharing it would read them half-written.
using ExclusiveWhileSaving = std::unique_lock<detail::ParameterLock>;
io_detail::TextRecord param_item(const std::shared_ptr<ParameterStorage>& p, std::string name) {
  check_record_name(name, "TextFileSaver");
  return {false, std::move(name), p->dim, p->values.v, p->nonzero_grad ? p->g.v : nullptr,
          Parameter(p).current_weight_decay()};
}
io_detail::TextRecord lookup_item(const std::shared_ptr<LookupParameterStorage>& p, std::string name) {
  check_record_name(name, "TextFileSaver");
  return {true, std::move(name), p->all_dim, p->all_values.v, p->nonzero_grad ? p->all_grads.v : nullptr,
          LookupParameter(p).current_weight_decay()};
}
}  // namespace

void TextFileSaver::save(const ParameterCollection& model, const std::string& key) {
  std::string prefix;
  if (!key.empty()) {
    check_record_name(key, "TextFileSaver::save");
    if (key.front() != '/')
      throw std::invalid_argument("TextFileSaver::save: a collection key must start with '/', got '" + key + "'");
    prefix = key.back() == '/' ? key : key + '/';
  }
  const std::string& own = model.get_fullname();
  auto renamed = [&](const std::string& full) { return key.empty() ? full : prefix + full.substr(own.size()); };
  ExclusiveWhileSaving lock(detail::parameter_lock());
  const ParameterCollectionStorage& s = model.get_storage();
  std::vector<io_detail::TextRecord> items;
  items.reserve(s.params.size() + s.lookup_params.size());
  for (const auto& p : s.params) items.push_back(param_item(p, renamed(p->name)));
  for (const auto& p : s.lookup_params) items.push_back(lookup_item(p, renamed(p->name)));
  write_records(items.data(), items.size());
}

void TextFileSaver::save(const Parameter& param, const std::string& key) {
  if (!param.p) throw std::invalid_argument("TextFileSaver::save: the Parameter is not initialised");
  ExclusiveWhileSaving lock(detail::parameter_lock());
  io_detail::TextRecord it = param_item(param.p, key.empty() ? param.p->name : key);
  write_records(&it, 1);
}

void TextFileSaver::save(const LookupParameter& param, const std::string& key) {
  if (!param.p) throw std::invalid_argument("TextFileSaver::save: the LookupParameter is not initialised");
  ExclusiveWhileSaving lock(detail::parameter_lock());
  io_detail::TextRecord it = lookup_item(param.p, key.empty() ? param.p->name : key);
  write_records(&it, 1);
}

// ---------------------------------------------------------------------------------------------
// Loading

namespace {

struct RecordHeader {
  bool lookup = false;
  std::string name;
  Dim dim;
  size_t bytes = 0;
  bool has_grads = true;  // FULL_GRAD, or an old header without the token
  size_t line = 0;
};

// Values (and gradients) of one record, parsed but not yet assigned.
struct ParsedRecord {
  std::vector<float> values, grads;
  bool has_grads = false;
};

class RecordReader {
 public:
  RecordReader(const std::string& filename, std::string who) : filename_(filename), who_(std::move(who)) {
    in_.open(filename, std::ios::binary);
    if (!in_) throw std::runtime_error(who_ + ": could not open " + filename);
  }

  // False at the end of the file.
  bool next_header(RecordHeader* h) {
    std::string line;
    bool complete;
    do {
      if (!read_line(&line, &complete)) return false;
    } while (line.empty() && complete);
    if (!complete) fail("truncated header line");
    std::vector<std::string_view> tok;
    std::string_view rest(line);
    while (!rest.empty()) {
      size_t b = 0;
      while (b < rest.size() && is_space(rest[b])) ++b;
      size_t e = b;
      while (e < rest.size() && !is_space(rest[e])) ++e;
      if (e > b) tok.push_back(rest.substr(b, e - b));
      rest.remove_prefix(e);
    }
    if (tok.empty() || (tok[0] != kParamTag && tok[0] != kLookupTag))
      fail("expected a #Parameter# or #LookupParameter# header, got '" + clip(line) + "'");
    if (tok.size() < 4 || tok.size() > 5)
      fail("malformed header '" + clip(line) + "' (expected: tag name {dims} bytes [ZERO_GRAD|FULL_GRAD])");
    h->lookup = tok[0] == kLookupTag;
    h->name = std::string(tok[1]);
    h->line = line_no_;
    h->dim = parse_dim(tok[2]);
    if (h->lookup && h->dim.nd < 2)
      fail("lookup parameter " + h->name + " has dims " + std::string(tok[2]) +
           "; expected the row dims followed by the number of rows");
    const auto r = std::from_chars(tok[3].data(), tok[3].data() + tok[3].size(), h->bytes);
    if (r.ec != std::errc() || r.ptr != tok[3].data() + tok[3].size())
      fail("byte count '" + std::string(tok[3]) + "' of " + h->name + " is not a number");
    if (tok.size() == 5) {
      if (tok[4] == "ZERO_GRAD")
        h->has_grads = false;
      else if (tok[4] == "FULL_GRAD")
        h->has_grads = true;
      else
        fail("unknown gradient marker '" + std::string(tok[4]) + "' (expected ZERO_GRAD or FULL_GRAD)");
    } else {
      h->has_grads = true;
    }
    return true;
  }

  // Reads the record's data lines into out (or only checks their sizes when out is null).
  void read_data(const RecordHeader& h, ParsedRecord* out) {
    const size_t n = h.dim.size();
    size_t bytes = 0;
    std::string line;
    for (int which = 0; which < (h.has_grads ? 2 : 1); ++which) {
      bool complete;
      if (!read_line(&line, &complete) || !complete)
        fail("file ends inside the data of " + h.name + " (truncated file?)");
      bytes += line.size() + 1;
      if (!out) continue;
      std::vector<float>& dst = which == 0 ? out->values : out->grads;
      parse_values(line, n, h.name, which == 0 ? "values" : "gradients", &dst);
    }
    if (bytes != h.bytes)
      fail("the header of " + h.name + " announces " + std::to_string(h.bytes) + " bytes of data but its lines hold " +
           std::to_string(bytes) + " (truncated or edited file?)");
    if (out) out->has_grads = h.has_grads;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(who_ + ": " + filename_ + ":" + std::to_string(line_no_) + ": " + what);
  }

 private:
  static std::string clip(const std::string& s) { return s.size() > 80 ? s.substr(0, 80) + "..." : s; }

  bool read_line(std::string* line, bool* complete) {
    if (!std::getline(in_, *line)) {
      if (in_.bad()) throw std::runtime_error(who_ + ": read error on " + filename_);
      return false;
    }
    ++line_no_;
    *complete = !in_.eof();  // getline stopped at '\n' rather than at the end of the file
    return true;
  }

  Dim parse_dim(std::string_view t) const {
    if (t.size() < 3 || t.front() != '{' || t.back() != '}') fail("malformed dims '" + std::string(t) + "'");
    t = t.substr(1, t.size() - 2);
    std::vector<unsigned> ds;
    uint64_t total = 1;
    while (true) {
      unsigned v = 0;
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc()) fail("malformed dims '{" + std::string(t) + "}'");  // 0 too: DyNet writes empty parameters
      if (__builtin_mul_overflow(total, uint64_t(v), &total) || total > Dim::kMaxElements)
        fail("dims '{" + std::string(t) + "}' are too large");
      ds.push_back(v);
      t.remove_prefix(static_cast<size_t>(r.ptr - t.data()));
      if (t.empty()) break;
      if (t.front() != ',') fail("malformed dims (batched or garbled): '" + std::string(t) + "'");
      t.remove_prefix(1);
    }
    if (ds.size() > DYNET_MAX_TENSOR_DIM) fail("more than " + std::to_string(DYNET_MAX_TENSOR_DIM) + " dims");
    return Dim(ds);
  }

  void parse_values(const std::string& line, size_t n, const std::string& name, const char* what,
                    std::vector<float>* dst) const {
    dst->clear();
    // Reserve from the line's length, never from the header, so a corrupt header cannot cause a huge allocation.
    dst->reserve(std::min(n, line.size() / 2 + 1));
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      if (i == line.size()) break;
      size_t e = i;
      while (e < line.size() && !is_space(line[e])) ++e;
      float x;
      if (!io_detail::parse_float_token(std::string_view(line).substr(i, e - i), &x))
        fail(std::string("bad number '") + clip(line.substr(i, e - i)) + "' in the " + what + " of " + name);
      if (dst->size() == n)
        fail(std::string("more than ") + std::to_string(n) + " " + what + " for " + name);
      dst->push_back(x);
      i = e;
    }
    if (dst->size() != n)
      fail(std::string("expected ") + std::to_string(n) + " " + what + " for " + name + ", found " +
           std::to_string(dst->size()));
  }

  std::ifstream in_;
  std::string filename_, who_;
  size_t line_no_ = 0;
};

// Loaders write values with no graph computing or update running.
using ExclusiveParameters = std::unique_lock<detail::ParameterLock>;

// Writes a parsed record into a parameter; the caller holds the parameter lock exclusively.
void assign(ParameterStorage& p, const ParsedRecord& r) {
  std::copy(r.values.begin(), r.values.end(), p.values.v);
  if (r.has_grads) {
    std::copy(r.grads.begin(), r.grads.end(), p.g.v);
    p.nonzero_grad = true;
  } else {
    p.clear_grad();
  }
}

void assign(LookupParameterStorage& p, const ParsedRecord& r) {
  std::copy(r.values.begin(), r.values.end(), p.all_values.v);
  if (r.has_grads) {
    std::copy(r.grads.begin(), r.grads.end(), p.all_grads.v);
    p.non_zero_grads.clear();
    const size_t row = p.dim.size();
    for (size_t k = 0; k < p.values.size(); ++k) {
      const float* g = p.all_grads.v + size_t(k) * row;
      if (std::any_of(g, g + row, [](float x) { return x != 0.f; })) p.non_zero_grads.insert(k);
    }
    p.nonzero_grad = true;
  } else {
    p.clear_grad();
  }
}

std::string mismatch(const std::string& who, const std::string& name, const std::string& file, const Dim& in_file,
                     const std::string& target, const Dim& want) {
  return who + ": dims of " + name + " in " + file + " (" + dim_text(in_file) + ") do not match " + target + " (" +
         dim_text(want) + ")";
}

// Finds the first record of the given kind named `name` and parses it; throws when there is none.
std::pair<RecordHeader, ParsedRecord> find_record(const std::string& filename, const std::string& who, bool lookup,
                                                  const std::string& name) {
  RecordReader reader(filename, who);
  RecordHeader h;
  while (reader.next_header(&h)) {
    if (h.lookup == lookup && h.name == name) {
      ParsedRecord r;
      reader.read_data(h, &r);
      return {std::move(h), std::move(r)};
    }
    reader.read_data(h, nullptr);
  }
  throw std::runtime_error(who + ": no " + (lookup ? kLookupTag : kParamTag) + " record named '" + name + "' in " +
                           filename);
}

}  // namespace

TextFileLoader::TextFileLoader(const std::string& filename) : filename_(filename) {}

void TextFileLoader::populate(ParameterCollection& model, const std::string& key) {
  const char* who = "TextFileLoader::populate";
  const std::string prefix = key.empty() || key.back() == '/' ? key : key + '/';
  const ParameterCollectionStorage& s = model.get_storage();
  std::vector<ParsedRecord> params(s.params.size()), lookups(s.lookup_params.size());
  size_t n_params = 0, n_lookups = 0;
  RecordReader reader(filename_, who);
  RecordHeader h;
  while (reader.next_header(&h)) {
    if (h.name.compare(0, prefix.size(), prefix) != 0) {
      reader.read_data(h, nullptr);
      continue;
    }
    size_t& count = h.lookup ? n_lookups : n_params;
    const size_t available = h.lookup ? lookups.size() : params.size();
    if (count >= available)
      reader.fail(std::string("more ") + (h.lookup ? "lookup parameters" : "parameters") + " under key '" + key +
                  "' than the model has (" + std::to_string(available) + "); " + h.name + " has no counterpart");
    const Dim want = h.lookup ? s.lookup_params[count]->all_dim : s.params[count]->dim;
    if (!(h.dim == want)) {
      const std::string& target = h.lookup ? s.lookup_params[count]->name : s.params[count]->name;
      throw std::runtime_error(mismatch(who, h.name, filename_, h.dim, "the model's " + target, want));
    }
    reader.read_data(h, h.lookup ? &lookups[count] : &params[count]);
    ++count;
  }
  if (n_params != params.size() || n_lookups != lookups.size())
    throw std::runtime_error(std::string(who) + ": " + filename_ + " holds " + std::to_string(n_params) +
                             " parameters and " + std::to_string(n_lookups) + " lookup parameters under key '" +
                             key + "' but the model has " + std::to_string(params.size()) + " and " +
                             std::to_string(lookups.size()));
  ExclusiveParameters lock(detail::parameter_lock());
  for (size_t i = 0; i < params.size(); ++i) assign(*s.params[i], params[i]);
  for (size_t i = 0; i < lookups.size(); ++i) assign(*s.lookup_params[i], lookups[i]);
}

void TextFileLoader::populate(Parameter& param, const std::string& key) {
  const char* who = "TextFileLoader::populate";
  if (!param.p) throw std::invalid_argument(std::string(who) + ": the Parameter is not initialised");
  const std::string name = key.empty() ? param.p->name : key;
  const auto [header, record] = find_record(filename_, who, false, name);
  if (!(header.dim == param.p->dim))
    throw std::runtime_error(mismatch(who, name, filename_, header.dim, "the parameter " + param.p->name,
                                      param.p->dim));
  ExclusiveParameters lock(detail::parameter_lock());
  assign(*param.p, record);
}

void TextFileLoader::populate(LookupParameter& lookup_param, const std::string& key) {
  const char* who = "TextFileLoader::populate";
  if (!lookup_param.p) throw std::invalid_argument(std::string(who) + ": the LookupParameter is not initialised");
  const std::string name = key.empty() ? lookup_param.p->name : key;
  const auto [header, record] = find_record(filename_, who, true, name);
  if (!(header.dim == lookup_param.p->all_dim))
    throw std::runtime_error(mismatch(who, name, filename_, header.dim,
                                      "the lookup parameter " + lookup_param.p->name, lookup_param.p->all_dim));
  ExclusiveParameters lock(detail::parameter_lock());
  assign(*lookup_param.p, record);
}

Parameter TextFileLoader::load_param(ParameterCollection& model, const std::string& key) {
  const char* who = "TextFileLoader::load_param";
  if (key.empty()) throw std::invalid_argument(std::string(who) + ": key must name a record");
  const auto [header, record] = find_record(filename_, who, false, key);
  Parameter p = model.add_parameters(header.dim, ParameterInitConst(0.f));
  ExclusiveParameters lock(detail::parameter_lock());
  p.p->name = header.name;
  assign(*p.p, record);
  return p;
}

LookupParameter TextFileLoader::load_lookup_param(ParameterCollection& model, const std::string& key) {
  const char* who = "TextFileLoader::load_lookup_param";
  if (key.empty()) throw std::invalid_argument(std::string(who) + ": key must name a record");
  const auto [header, record] = find_record(filename_, who, true, key);
  Dim row = header.dim;
  const size_t n = row.d[row.nd - 1];
  row.resize(row.nd - 1);
  LookupParameter p = model.add_lookup_parameters(n, row, ParameterInitConst(0.f));
  ExclusiveParameters lock(detail::parameter_lock());
  p.p->name = header.name;
  assign(*p.p, record);
  return p;
}

void save_dynet_model(const std::string& filename, ParameterCollection* model) {
  if (!model) throw std::invalid_argument("save_dynet_model: null model");
  TextFileSaver(filename).save(*model);
}

void load_dynet_model(const std::string& filename, ParameterCollection* model) {
  if (!model) throw std::invalid_argument("load_dynet_model: null model");
  TextFileLoader(filename).populate(*model);
}

}  // namespace dynet
