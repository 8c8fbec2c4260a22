// Dim: a tensor shape of up to 7 dims plus a batch count (batch is the slowest axis).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#define DYNET_MAX_TENSOR_DIM 7

namespace dynet {

struct Dim {
  unsigned d[DYNET_MAX_TENSOR_DIM] = {};
  unsigned nd = 0;  // number of dims
  unsigned bd = 1;  // batch count

  Dim() = default;
  Dim(std::initializer_list<unsigned> x) { assign(x); }
  Dim(std::initializer_list<unsigned> x, unsigned b) : bd(b) { assign(x); }
  explicit Dim(const std::vector<long>& x);
  Dim(const std::vector<long>& x, unsigned b);
  explicit Dim(const std::vector<unsigned>& x, unsigned b = 1);

  // Element counts are 64-bit (DyNet's were unsigned and wrapped past 2^32 elements); code that
  // assigns them to an unsigned still compiles. A shape whose count does not even fit in 64 bits
  // wraps here: anything that allocates or walks a tensor uses checked_size().
  // size() = batch_size() * bd
  size_t size() const { return batch_size() * bd; }
  // product of d[0..nd)
  size_t batch_size() const {
    size_t p = 1;
    for (unsigned i = 0; i < nd; ++i) p *= d[i];
    return p;
  }
  // size(), or throws std::invalid_argument naming `what` and the shape when the element count
  // exceeds kMaxElements (far beyond any memory, and small enough that byte counts cannot wrap).
  static constexpr size_t kMaxElements = size_t(1) << 60;
  size_t checked_size(const char* what) const;
  unsigned sum_dims() const;
  unsigned ndims() const { return nd; }
  unsigned rows() const { return nd > 0 ? d[0] : 1; }
  unsigned cols() const { return nd > 1 ? d[1] : 1; }
  unsigned num_nonone_dims() const;
  unsigned batch_elems() const { return bd; }
  // size of dim i (1 past nd)
  unsigned operator[](unsigned i) const { return i < nd ? d[i] : 1; }
  unsigned size(unsigned i) const { return (*this)[i]; }
  void set(unsigned i, unsigned s);
  void resize(unsigned n);
  // drop trailing dims of size 1 (keeps at least one dim)
  Dim truncate() const;
  // same dims with bd = 1
  Dim single_batch() const;
  void delete_dim(unsigned i);
  void delete_dims(std::vector<unsigned> dims, bool reduce_batch);
  void add_dim(unsigned n);
  void insert_dim(unsigned i, unsigned n);
  // {rows, cols} -> {cols, rows}; vectors become row vectors
  Dim transpose() const;
  void print_profile(std::ostream& out) const;
  std::string str() const;

  bool operator==(const Dim& o) const;
  bool operator!=(const Dim& o) const { return !(*this == o); }

 private:
  // Inline: shape rules build Dims on the graph-construction path.
  void assign(std::initializer_list<unsigned> x) {
    if (x.size() > DYNET_MAX_TENSOR_DIM) too_many_dims(x.size());
    for (unsigned v : x) d[nd++] = v;
  }
  [[noreturn]] static void too_many_dims(size_t n);
};

std::ostream& operator<<(std::ostream& os, const Dim& d);
// Parses "{3,4}" or "{3,4X10}".
std::istream& operator>>(std::istream& is, Dim& d);
std::ostream& operator<<(std::ostream& os, const std::vector<Dim>& ds);

}  // namespace dynet
