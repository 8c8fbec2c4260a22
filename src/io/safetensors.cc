// safetensors model files (save_safetensors / load_safetensors); layout documented in dynet/io.h.
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/io.h"
#include "core/param_lock.h"
#include "io/atomic_file.h"

namespace dynet {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit
constexpr int kMaxJsonDepth = 32;

// ---- JSON (just what the safetensors header needs) ----

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  std::string text;  // string contents, or a number's literal
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* member(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

class JsonParser {
 public:
  JsonParser(const std::string& text, std::string where) : p_(text.data()), end_(text.data() + text.size()), where_(std::move(where)) {}

  Json parse_document() {
    Json v = parse_value(0);
    skip_space();
    if (p_ != end_) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("load_safetensors: malformed JSON header of " + where_ + ": " + what);
  }
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  void expect(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  Json parse_value(int depth) {
    if (depth > kMaxJsonDepth) fail("nested too deeply");
    skip_space();
    if (p_ == end_) fail("unexpected end");
    Json v;
    const char c = *p_;
    if (c == '{') {
      ++p_;
      v.kind = Json::kObject;
      skip_space();
      if (p_ != end_ && *p_ == '}') {
        ++p_;
        return v;
      }
      while (true) {
        skip_space();
        if (p_ == end_ || *p_ != '"') fail("expected a string key");
        std::string key = parse_string();
        if (v.member(key)) fail("duplicate key \"" + key + "\"");
        expect(':');
        v.members.emplace_back(std::move(key), parse_value(depth + 1));
        skip_space();
        if (p_ != end_ && *p_ == ',') {
          ++p_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      ++p_;
      v.kind = Json::kArray;
      skip_space();
      if (p_ != end_ && *p_ == ']') {
        ++p_;
        return v;
      }
      while (true) {
        v.items.push_back(parse_value(depth + 1));
        skip_space();
        if (p_ != end_ && *p_ == ',') {
          ++p_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::kString;
      v.text = parse_string();
      return v;
    }
    if (literal("true") || literal("false")) {
      v.kind = Json::kBool;
      return v;
    }
    if (literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::kNumber;
      v.text = parse_number();
      return v;
    }
    fail(std::string("unexpected character '") + c + "'");
  }

  std::string parse_number() {
    const char* b = p_;
    auto digits = [&] {
      const char* s = p_;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == s) fail("malformed number");
    };
    if (*p_ == '-') ++p_;
    if (p_ != end_ && *p_ == '0')
      ++p_;
    else
      digits();
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      digits();
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      digits();
    }
    return std::string(b, p_);
  }

  unsigned hex4() {
    if (end_ - p_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = *p_++;
      v <<= 4;
      if (h >= '0' && h <= '9') v |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f') v |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= unsigned(h - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    ++p_;  // opening quote
    std::string s;
    while (true) {
      if (p_ == end_) fail("unterminated string");
      const char c = *p_++;
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        s += c;
        continue;
      }
      if (p_ == end_) fail("unterminated string");
      const char e = *p_++;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') fail("unpaired surrogate");
            p_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(s, cp);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }

  const char* p_;
  const char* end_;
  std::string where_;
};

void append_json_string(std::string& out, const std::string& s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

// ---- layout: DyNet memory is column-major; the file holds row-major (C order) arrays ----

// Visits the elements in C order (last index fastest); f(c_index, column_major_index).
template <class F>
void for_each_c_order(const unsigned* d, unsigned k, F&& f) {
  size_t n = 1;
  for (size_t j = 0; j < k; ++j) n *= d[j];
  if (k <= 1) {
    for (size_t i = 0; i < n; ++i) f(i, i);
    return;
  }
  size_t stride[DYNET_MAX_TENSOR_DIM];
  stride[0] = 1;
  for (size_t j = 1; j < k; ++j) stride[j] = stride[j - 1] * d[j - 1];
  unsigned idx[DYNET_MAX_TENSOR_DIM] = {};
  size_t col = 0;
  const unsigned last = k - 1;
  for (size_t c = 0; c < n;) {
    for (size_t i = 0; i < d[last]; ++i, ++c) f(c, col + i * stride[last]);
    // advance the odometer over the leading k-1 indices
    for (int j = static_cast<int>(last) - 1; j >= 0; --j) {
      col += stride[j];
      if (++idx[j] < d[j]) break;
      col -= stride[j] * d[j];
      idx[j] = 0;
    }
  }
}

uint32_t to_le(uint32_t x) {
  if constexpr (std::endian::native == std::endian::big) return __builtin_bswap32(x);
  return x;
}

struct Entry {
  std::string name;
  std::vector<uint64_t> shape;  // in the file's (row-major) order
  const float* values;
  const Dim* row_dim;  // dims of one tensor of values (a lookup row, or the whole parameter)
  unsigned rows;       // lookup: number of rows; parameter: 1
  float scale;
};

std::vector<Entry> entries_of(const ParameterCollection& model) {
  const ParameterCollectionStorage& s = model.get_storage();
  std::vector<Entry> out;
  for (const auto& p : s.params) {
    Entry e{p->name, {}, p->values.v, &p->dim, 1, Parameter(p).current_weight_decay()};
    for (size_t j = 0; j < p->dim.nd; ++j) e.shape.push_back(p->dim.d[j]);
    out.push_back(std::move(e));
  }
  for (const auto& p : s.lookup_params) {
    const unsigned rows = static_cast<unsigned>(p->values.size());
    Entry e{p->name, {rows}, p->all_values.v, &p->dim, rows, LookupParameter(p).current_weight_decay()};
    for (size_t j = 0; j < p->dim.nd; ++j) e.shape.push_back(p->dim.d[j]);
    out.push_back(std::move(e));
  }
  return out;
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace

void save_safetensors(const std::string& filename, const ParameterCollection& model) {
  // Exclusive: no update, asynchronous ones included, while the values are read (see io.cc's savers).
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  const std::vector<Entry> entries = entries_of(model);
  std::string header = "{\"__metadata__\":{\"format\":\"dynet\"}";
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    const uint64_t bytes = uint64_t(e.row_dim->size()) * e.rows * sizeof(float);
    header += ',';
    append_json_string(header, e.name);
    header += ":{\"dtype\":\"F32\",\"shape\":" + shape_text(e.shape) + ",\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // the data start 8-byte aligned, as the format recommends

  io_detail::AtomicFileWriter out(filename, "save_safetensors");
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xff);
  out.write(std::string_view(len, 8));
  out.write(header);
  std::vector<uint32_t> buf;
  for (const Entry& e : entries) {
    const size_t row = e.row_dim->size();
    buf.resize(row);
    for (size_t r = 0; r < e.rows; ++r) {
      const float* src = e.values + size_t(r) * row;
      for_each_c_order(e.row_dim->d, e.row_dim->nd, [&](size_t c, size_t col) {
        const float x = src[col] * e.scale;
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        buf[c] = to_le(bits);
      });
      out.write(std::string_view(reinterpret_cast<const char*>(buf.data()), row * sizeof(float)));
    }
  }
  out.commit();
}

void load_safetensors(const std::string& filename, ParameterCollection& model) {
  const std::string who = "load_safetensors";
  std::ifstream in(filename, std::ios::binary);
  if (!in) throw std::runtime_error(who + ": could not open " + filename);
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  auto fail = [&](const std::string& what) -> void { throw std::runtime_error(who + ": " + filename + ": " + what); };
  if (file_size < 8) fail("too short for a safetensors file (" + std::to_string(file_size) + " bytes)");
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t(len[i]) << (8 * i);
  if (header_size > kMaxHeaderBytes || header_size > file_size - 8)
    fail("header length " + std::to_string(header_size) + " does not fit the file (" + std::to_string(file_size) +
         " bytes): not a safetensors file, or truncated");
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  if (!in) fail("read error");
  const Json doc = JsonParser(header, filename).parse_document();
  if (doc.kind != Json::kObject) fail("the header is not a JSON object");
  const uint64_t data_size = file_size - 8 - header_size;

  struct Stored {
    std::string dtype;
    std::vector<uint64_t> shape;
    uint64_t begin, end;
  };
  auto as_uint = [&](const Json& j, const std::string& what) {
    uint64_t v = 0;
    const auto r = std::from_chars(j.text.data(), j.text.data() + j.text.size(), v);
    if (j.kind != Json::kNumber || r.ec != std::errc() || r.ptr != j.text.data() + j.text.size())
      fail(what + " is not a non-negative integer");
    return v;
  };
  std::map<std::string, Stored> stored;
  uint64_t covered = 0;
  for (const auto& [name, v] : doc.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::kObject) fail("__metadata__ is not an object");
      for (const auto& m : v.members)
        if (m.second.kind != Json::kString) fail("__metadata__ value of \"" + m.first + "\" is not a string");
      continue;
    }
    const std::string what = "tensor \"" + name + "\"";
    if (v.kind != Json::kObject) fail(what + " is not an object");
    const Json* dtype = v.member("dtype");
    const Json* shape = v.member("shape");
    const Json* offsets = v.member("data_offsets");
    if (!dtype || dtype->kind != Json::kString || !shape || shape->kind != Json::kArray || !offsets ||
        offsets->kind != Json::kArray || offsets->items.size() != 2)
      fail(what + " needs \"dtype\" (string), \"shape\" (array) and \"data_offsets\" ([begin, end])");
    Stored s{dtype->text, {}, as_uint(offsets->items[0], what + " offset"), as_uint(offsets->items[1], what + " offset")};
    uint64_t numel = 1;
    for (const Json& d : shape->items) {
      s.shape.push_back(as_uint(d, what + " shape entry"));
      if (__builtin_mul_overflow(numel, s.shape.back(), &numel) || numel > Dim::kMaxElements)
        fail(what + " has an absurd shape");
    }
    if (s.begin > s.end || s.end > data_size)
      fail(what + " data_offsets [" + std::to_string(s.begin) + "," + std::to_string(s.end) + "] lie outside the " +
           std::to_string(data_size) + " data bytes (truncated file?)");
    if (s.dtype == "F32" && s.end - s.begin != numel * 4)
      fail(what + " holds " + std::to_string(s.end - s.begin) + " bytes but shape " + shape_text(s.shape) +
           " of F32 needs " + std::to_string(numel * 4));
    covered = std::max(covered, s.end);
    stored.emplace(name, std::move(s));
  }
  if (covered != data_size)
    fail("the tensors end at byte " + std::to_string(covered) + " of a " + std::to_string(data_size) +
         "-byte data section");

  // Read and convert everything before touching the model.
  const std::vector<Entry> entries = entries_of(model);
  std::vector<std::vector<float>> loaded(entries.size());
  std::vector<uint32_t> raw;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const auto it = stored.find(e.name);
    if (it == stored.end()) fail("no tensor named \"" + e.name + "\"");
    const Stored& s = it->second;
    if (s.dtype != "F32") fail("tensor \"" + e.name + "\" has dtype " + s.dtype + "; only F32 is supported");
    if (s.shape != e.shape)
      fail("tensor \"" + e.name + "\" has shape " + shape_text(s.shape) + " but the model's has " + shape_text(e.shape));
    const size_t row = e.row_dim->size();
    raw.resize(row * e.rows);
    in.seekg(static_cast<std::streamoff>(8 + header_size + s.begin));
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * 4));
    if (!in) fail("read error in tensor \"" + e.name + "\"");
    std::vector<float>& dst = loaded[i];
    dst.resize(raw.size());
    for (size_t r = 0; r < e.rows; ++r) {
      const uint32_t* src = raw.data() + size_t(r) * row;
      float* out = dst.data() + size_t(r) * row;
      for_each_c_order(e.row_dim->d, e.row_dim->nd, [&](size_t c, size_t col) {
        const uint32_t bits = to_le(src[c]);
        std::memcpy(&out[col], &bits, 4);
      });
    }
  }
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  const ParameterCollectionStorage& st = model.get_storage();
  size_t i = 0;
  for (const auto& p : st.params) {
    std::copy(loaded[i].begin(), loaded[i].end(), p->values.v);
    p->clear_grad();
    ++i;
  }
  for (const auto& p : st.lookup_params) {
    std::copy(loaded[i].begin(), loaded[i].end(), p->all_values.v);
    p->clear_grad();
    ++i;
  }
}

}  // namespace dynet
