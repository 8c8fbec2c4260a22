#include "dynet/dim.h"

#include <algorithm>
#include <istream>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace dynet {

namespace {
void check_rank(size_t n, const char* where) {
  if (n > DYNET_MAX_TENSOR_DIM)
    throw std::invalid_argument(std::string("Dim: ") + where + " has " + std::to_string(n) +
                                " dims; at most " + std::to_string(DYNET_MAX_TENSOR_DIM) +
                                " are supported");
}
}  // namespace

void Dim::too_many_dims(size_t n) {
  check_rank(n, "initializer");
  throw std::logic_error("unreachable");
}
Dim::Dim(const std::vector<long>& x) {
  check_rank(x.size(), "vector");
  for (long v : x) {
    if (v < 0 || v > long(~0u)) throw std::invalid_argument("Dim: dimension " + std::to_string(v) + " out of range");
    d[nd++] = static_cast<unsigned>(v);
  }
}
Dim::Dim(const std::vector<long>& x, unsigned b) : Dim(x) { bd = b; }
Dim::Dim(const std::vector<unsigned>& x, unsigned b) : bd(b) {
  check_rank(x.size(), "vector");
  for (unsigned v : x) d[nd++] = v;
}

size_t Dim::checked_size(const char* what) const {
  size_t p = bd;
  bool fits = p <= kMaxElements;
  for (unsigned i = 0; i < nd && fits; ++i) fits = !__builtin_mul_overflow(p, size_t(d[i]), &p) && p <= kMaxElements;
  if (!fits)
    throw std::invalid_argument(std::string(what) + ": shape " + str() + " has more than 2^60 elements");
  return p;
}

unsigned Dim::sum_dims() const {
  unsigned s = 0;
  for (unsigned i = 0; i < nd; ++i) s += d[i];
  return s;
}

unsigned Dim::num_nonone_dims() const {
  unsigned c = 0;
  for (unsigned i = 0; i < nd; ++i) c += d[i] != 1;
  return c;
}

void Dim::set(unsigned i, unsigned s) {
  if (i >= DYNET_MAX_TENSOR_DIM)
    throw std::invalid_argument("Dim::set: dim index " + std::to_string(i) + " out of range");
  while (nd <= i) d[nd++] = 1;
  d[i] = s;
}

void Dim::resize(unsigned n) {
  check_rank(n, "resize");
  while (nd < n) d[nd++] = 1;
  nd = n;
}

Dim Dim::truncate() const {
  Dim r = *this;
  while (r.nd > 1 && r.d[r.nd - 1] == 1) --r.nd;
  return r;
}

Dim Dim::single_batch() const {
  Dim r = *this;
  r.bd = 1;
  return r;
}

void Dim::delete_dim(unsigned i) {
  if (i >= nd) {
    if (i < DYNET_MAX_TENSOR_DIM) return;  // deleting an implicit 1
    throw std::invalid_argument("Dim::delete_dim: dim " + std::to_string(i) + " out of range for " + str());
  }
  if (nd == 1) {
    d[0] = 1;
    return;
  }
  for (unsigned j = i + 1; j < nd; ++j) d[j - 1] = d[j];
  --nd;
}

void Dim::delete_dims(std::vector<unsigned> dims, bool reduce_batch) {
  std::sort(dims.rbegin(), dims.rend());
  for (unsigned i : dims) delete_dim(i);
  if (reduce_batch) bd = 1;
}

void Dim::add_dim(unsigned n) {
  check_rank(nd + 1, "add_dim");
  d[nd++] = n;
}

void Dim::insert_dim(unsigned i, unsigned n) {
  check_rank(nd + 1, "insert_dim");
  if (i > nd) throw std::invalid_argument("Dim::insert_dim: position " + std::to_string(i) + " > " + std::to_string(nd));
  for (unsigned j = nd; j > i; --j) d[j] = d[j - 1];
  d[i] = n;
  ++nd;
}

Dim Dim::transpose() const {
  if (nd > 2) throw std::invalid_argument("Dim::transpose: only defined for 1- and 2-d shapes, got " + str());
  if (nd == 1) return Dim({1, d[0]}, bd);
  if (nd == 0) return *this;
  return Dim({d[1], d[0]}, bd);
}

bool Dim::operator==(const Dim& o) const {
  if (bd != o.bd) return false;
  // Trailing 1s do not change a shape: {3} == {3,1}.
  unsigned n = std::max(nd, o.nd);
  for (unsigned i = 0; i < n; ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

void Dim::print_profile(std::ostream& out) const { out << *this; }

std::string Dim::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Dim& d) {
  os << '{';
  for (unsigned i = 0; i < d.nd; ++i) os << (i ? "," : "") << d.d[i];
  if (d.bd != 1) os << 'X' << d.bd;
  return os << '}';
}

std::istream& operator>>(std::istream& is, Dim& d) {
  char c;
  if (!(is >> c) || c != '{') {
    is.setstate(std::ios::failbit);
    return is;
  }
  Dim r;
  r.nd = 0;
  while (is >> c) {
    if (c == '}') {
      d = r;
      return is;
    }
    if (c == ',') continue;
    if (c == 'X') {
      if (!(is >> r.bd)) break;
      continue;
    }
    is.putback(c);
    unsigned v;
    if (!(is >> v) || r.nd == DYNET_MAX_TENSOR_DIM) break;
    r.d[r.nd++] = v;
  }
  is.setstate(std::ios::failbit);
  return is;
}

std::ostream& operator<<(std::ostream& os, const std::vector<Dim>& ds) {
  os << '[';
  for (size_t i = 0; i < ds.size(); ++i) os << (i ? "," : "") << ds[i];
  return os << ']';
}

}  // namespace dynet
