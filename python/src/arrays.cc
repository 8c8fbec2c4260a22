// numpy in and out, and dy.Tensor (what Expression.tensor_value() returns).
//
// In: any object with the buffer protocol (numpy arrays of any layout, memoryviews) is read through its
// strides and converted to float32 in one pass, straight into the column-major storage the graph reads;
// other objects (lists, tuples, scalars) go through numpy.asarray first. Out: float64 copies, as DyNet's
// Python module returns them (npvalue, as_array, gradient, Tensor.as_numpy): graph memory is reused
// after renew_cg and parameters change in place at each update, so a view would change under its
// holder. DLPack (__dlpack__) gives float32, the graph's type. A Tensor owns a copy of the value.
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "core/param_lock.h"
#include "dynet/tensor.h"
#include "ext.h"

namespace dynet::py {
using namespace nb::literals;

namespace {

// The element type of a buffer's struct format, or 0 when it is not a plain native number.
char element_type(const char* format) {
  if (!format) return 'B';
  if (*format == '@' || *format == '=' || *format == '<') ++format;  // native / little-endian
  if (!format[0] || format[1]) return 0;                             // one element, no repeat count
  return *format;
}

template <class T>
bool gather(const Py_buffer& b, float* out) {
  if (b.itemsize != static_cast<Py_ssize_t>(sizeof(T))) return false;  // a standard-size format ('<l' is 4 bytes)
  // Column-major output: the first axis varies fastest. idx counts over the axes in that order.
  const int nd = b.ndim;
  const Py_ssize_t n = b.len / b.itemsize;
  if (nd == 0) {
    T x;
    std::memcpy(&x, b.buf, sizeof(T));
    out[0] = static_cast<float>(x);
    return true;
  }
  Py_ssize_t idx[64] = {};
  const char* base = static_cast<const char*>(b.buf);
  for (Py_ssize_t k = 0; k < n; ++k) {
    Py_ssize_t off = 0;
    for (int a = 0; a < nd; ++a) off += idx[a] * b.strides[a];
    T x;
    std::memcpy(&x, base + off, sizeof(T));
    out[k] = static_cast<float>(x);
    for (int a = 0; a < nd && ++idx[a] == b.shape[a]; ++a) idx[a] = 0;
  }
  return true;
}

bool convert_buffer(const Py_buffer& b, float* out) {
  const char t = element_type(b.format);
  const bool fortran = PyBuffer_IsContiguous(&b, 'F');
  if (t == 'f' && b.itemsize == 4 && fortran) {
    if (b.len) std::memcpy(out, b.buf, static_cast<size_t>(b.len));
    return true;
  }
  switch (t) {
    case 'f': return gather<float>(b, out);
    case 'd': return gather<double>(b, out);
    case 'b': return gather<signed char>(b, out);
    case 'B': return gather<unsigned char>(b, out);
    case '?': return gather<bool>(b, out);
    case 'h': return gather<short>(b, out);
    case 'H': return gather<unsigned short>(b, out);
    case 'i': return gather<int>(b, out);
    case 'I': return gather<unsigned>(b, out);
    case 'l': return gather<long>(b, out);
    case 'L': return gather<unsigned long>(b, out);
    case 'q': return gather<long long>(b, out);
    case 'Q': return gather<unsigned long long>(b, out);
    default: return false;
  }
}

// A buffer view of o, released on destruction.
struct Buffer {
  Py_buffer b{};
  bool ok = false;
  explicit Buffer(PyObject* o) {
    ok = PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) == 0;
    if (!ok) PyErr_Clear();
  }
  ~Buffer() {
    if (ok) PyBuffer_Release(&b);
  }
};

nb::object& numpy() {
  static nb::object* np = new nb::object(nb::module_::import_("numpy"));  // never freed (interpreter exit)
  return *np;
}

}  // namespace

FloatArray from_array(nb::handle obj, const char* what) {
  nb::object holder = nb::borrow(obj);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (PyObject_CheckBuffer(holder.ptr())) {
      Buffer buf(holder.ptr());
      if (buf.ok) {
        const char t = element_type(buf.b.format);
        if (t == 'Z' || (buf.b.format && buf.b.format[0] == 'Z'))
          throw nb::type_error((std::string(what) + ": complex values are not supported").c_str());
        if (buf.b.ndim > static_cast<int>(DYNET_MAX_TENSOR_DIM) + 1)
          throw std::invalid_argument(std::string(what) + ": an array of " + std::to_string(buf.b.ndim) +
                                      " dimensions (at most " + std::to_string(DYNET_MAX_TENSOR_DIM) +
                                      ", plus the batch)");
        for (int a = 0; a < buf.b.ndim; ++a)
          if (buf.b.shape[a] > 0xffffffffLL) throw std::invalid_argument(std::string(what) + ": a dimension is too large");
        FloatArray r;
        r.dims.assign(buf.b.shape, buf.b.shape + buf.b.ndim);
        r.values.resize(static_cast<size_t>(buf.b.len / buf.b.itemsize));
        // A large array converts with the GIL released: the view keeps it alive and unresized (a thread
        // writing into it meanwhile gets what it would get from numpy's own copies).
        constexpr size_t kReleaseFrom = size_t(1) << 18;
        bool converted;
        if (r.values.size() >= kReleaseFrom) {
          nb::gil_scoped_release released;
          converted = convert_buffer(buf.b, r.values.data());
        } else {
          converted = convert_buffer(buf.b, r.values.data());
        }
        if (converted) return r;
      }
    }
    if (attempt == 1) break;
    // Lists, tuples, scalars, big-endian or object arrays: numpy converts (and raises for what it cannot).
    holder = numpy().attr("asarray")(holder, "dtype"_a = numpy().attr("float32"));
  }
  throw nb::type_error((std::string(what) + ": expected a number array (numpy array, list or tuple of numbers)").c_str());
}

Dim make_dim(const std::vector<unsigned>& dims, unsigned bd, const char* what) {
  if (dims.size() > DYNET_MAX_TENSOR_DIM)
    throw std::invalid_argument(std::string(what) + ": at most " + std::to_string(DYNET_MAX_TENSOR_DIM) +
                                " dims (plus the batch), got " + std::to_string(dims.size()));
  Dim d;
  d.nd = static_cast<unsigned>(dims.size());
  for (unsigned k = 0; k < d.nd; ++k) d.d[k] = dims[k];
  if (d.nd == 0) {
    d.nd = 1;
    d.d[0] = 1;
  }
  d.bd = bd;
  return d;
}

// The numpy shape of a Dim: dims, then the batch as a last axis when bd > 1 (DyNet's npvalue).
static std::vector<size_t> numpy_shape(const Dim& d, bool keep_batch_axis) {
  std::vector<size_t> shape(d.d, d.d + d.nd);
  if (d.bd > 1 || keep_batch_axis) shape.push_back(d.bd);
  return shape;
}
static std::vector<int64_t> fortran_strides(const std::vector<size_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    strides[k] = s;
    s *= static_cast<int64_t>(shape[k]);
  }
  return strides;
}

// A new numpy array of T: `count` blocks of `block` values copied from the given pointers, laid out
// with these shape and strides (in elements).
template <class T>
static nb::object new_array(const std::vector<const float*>& blocks, size_t block, const std::vector<size_t>& shape,
                            const std::vector<int64_t>& strides, std::mutex* parameter = nullptr) {
  const size_t n = blocks.size() * block;
  T* data = new T[n ? n : 1];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  auto copy = [&] {
    for (size_t b = 0; b < blocks.size(); ++b) std::copy(blocks[b], blocks[b] + block, data + b * block);
  };
  if (parameter) {
    // A parameter's values or gradients as they are between other threads' updates and gradient pushes:
    // under the shared side of the parameter lock (no ordinary update) and its mutex (no asynchronous one).
    nb::gil_scoped_release released;
    std::shared_lock<detail::ParameterLock> lock(detail::parameter_lock());
    std::lock_guard<std::mutex> guard(*parameter);
    copy();
  } else {
    copy();
  }
  return nb::cast(nb::ndarray<nb::numpy, T>(data, shape.size(), shape.data(), owner, strides.data()));
}

nb::object to_numpy(const Tensor& t, bool keep_batch_axis, std::mutex* parameter) {
  const std::vector<size_t> shape = numpy_shape(t.d, keep_batch_axis);
  return new_array<double>({t.v}, t.d.size(), shape, fortran_strides(shape), parameter);
}

nb::object to_numpy_float32(const Tensor& t) {
  const std::vector<size_t> shape = numpy_shape(t.d, false);
  return new_array<float>({t.v}, t.d.size(), shape, fortran_strides(shape));
}

nb::object rows_to_numpy(const Dim& row, const std::vector<Tensor>& rows, const std::vector<unsigned>* which,
                         std::mutex* parameter) {
  std::vector<const float*> blocks;
  for (size_t k = 0, n = which ? which->size() : rows.size(); k < n; ++k) {
    const unsigned r = which ? (*which)[k] : static_cast<unsigned>(k);
    if (r >= rows.size())
      throw nb::index_error(("row " + std::to_string(r) + " out of range for " + std::to_string(rows.size()) + " rows").c_str());
    blocks.push_back(rows[r].v);
  }
  // (rows, row dims...): each row contiguous, column-major within
  std::vector<size_t> shape{blocks.size()};
  std::vector<int64_t> strides{static_cast<int64_t>(row.size())};
  int64_t s = 1;
  for (unsigned k = 0; k < row.nd; ++k) {
    shape.push_back(row[k]);
    strides.push_back(s);
    s *= row[k];
  }
  return new_array<double>(blocks, row.size(), shape, strides, parameter);
}

// ---------------------------------------------------------------------------------------------
// dy.Tensor: a value (float) or the indices TensorTools computes from one (int), owned by the object.
namespace {
struct PyTensor {
  Dim d;
  std::vector<float> v;
  std::vector<std::ptrdiff_t> idx;
  bool is_index = false;

  Tensor view() {
    if (is_index) throw std::invalid_argument("Tensor: this is an index tensor (of argmax/topk/sampling)");
    return Tensor(d, v.data());
  }
  static PyTensor of(const IndexTensor& t) { return PyTensor{t.d, {}, t.v, true}; }
  static PyTensor of(const Dim& d, std::vector<float> v) { return PyTensor{d, std::move(v), {}, false}; }
};
}  // namespace

nb::object tensor_of(const Tensor& t) {
  return nb::cast(PyTensor::of(t.d, std::vector<float>(t.v, t.v + t.d.size())));
}

void init_arrays(nb::module_& m) {
  nb::class_<PyTensor>(m, "Tensor",
                       "A copy of an expression's value (Expression.tensor_value()), or the indices computed "
                       "from one.\n\n"
                       "as_numpy() has DyNet's layout: the dims, then the batch as the last axis.")
      .def("as_numpy", [](nb::handle self) -> nb::object {
        PyTensor& t = *nb::inst_ptr<PyTensor>(self);
        const std::vector<size_t> shape = numpy_shape(t.d, false);
        const std::vector<int64_t> strides = fortran_strides(shape);
        // Indices: a read-only view of the Tensor's own storage (the Tensor is the array's base). Values:
        // float64, as DyNet's as_numpy.
        if (t.is_index)
          return nb::cast(nb::ndarray<nb::numpy, const int64_t>(reinterpret_cast<const int64_t*>(t.idx.data()),
                                                                shape.size(), shape.data(), self, strides.data()));
        return new_array<double>({t.v.data()}, t.v.size(), shape, strides);
      }, nb::sig("def as_numpy(self) -> numpy.typing.NDArray[numpy.float64] | numpy.typing.NDArray[numpy.int64]"),
         "The tensor as a numpy array (the batch, when there is one, is the last axis).\n\n"
         "Returns:\n"
         "    numpy.ndarray: float64 values (a copy), or int64 indices (a read-only view) for an index tensor.")
      .def("argmax", [](PyTensor& t, int_arg<unsigned> dim, int_arg<unsigned> num) { return PyTensor::of(TensorTools::argmax(t.view(), dim, num)); },
           "dim"_a = 0, "num"_a = 1,
           "The indices of the largest values along a dim.\n\n"
           "Args:\n"
           "    dim (int): The dim to search along. Defaults to 0.\n"
           "    num (int): How many indices per slice. Defaults to 1.\n\n"
           "Returns:\n    Tensor: an index tensor.")
      .def("topk", [](PyTensor& t, int_arg<unsigned> dim, int_arg<unsigned> num) {
        const auto [values, indices] = TensorTools::topk(t.view(), dim, num);
        return std::make_pair(PyTensor::of(values.d, std::vector<float>(values.v, values.v + values.d.size())),
                              PyTensor::of(indices));
      }, "dim"_a = 0, "num"_a = 1,
           "The num largest values along a dim, and their indices.\n\n"
           "Args:\n"
           "    dim (int): The dim to search along. Defaults to 0.\n"
           "    num (int): How many values per slice. Defaults to 1.\n\n"
           "Returns:\n    tuple[Tensor, Tensor]: (values, indices).")
      .def("categorical_sample_log_prob", [](PyTensor& t, int_arg<unsigned> dim, int_arg<unsigned> num) {
        return PyTensor::of(TensorTools::categorical_sample_log_prob(t.view(), dim, num));
      }, "dim"_a = 0, "num"_a = 1,
           "Draws indices from the categorical distributions whose log-probabilities the tensor holds.\n\n"
           "Args:\n"
           "    dim (int): The dim along which each distribution lies. Defaults to 0.\n"
           "    num (int): How many samples per distribution. Defaults to 1.\n\n"
           "Returns:\n    Tensor: an index tensor.")
      .def("dim", [](PyTensor& t) {
        return std::make_pair(nb::tuple(nb::cast(std::vector<unsigned>(t.d.d, t.d.d + t.d.nd))), t.d.bd);
      }, "The dims of the tensor and its batch size.\n\n"
         "Returns:\n    tuple[tuple[int, ...], int]: (dims, batch size).")
      .def("__array__", [](nb::handle self, nb::args, nb::kwargs) { return self.attr("as_numpy")(); })
      .def("__repr__", [](PyTensor& t) {
        return std::string("<dynet Tensor ") + t.d.str() + (t.is_index ? " int>" : " float>");
      });
}

}  // namespace dynet::py
