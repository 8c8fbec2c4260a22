// The CUDA device and its registration with the core (set_gpu_runtime) when the library loads.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "core/device.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/device/prims.h"
#include "kernels/cuda/prims.cuh"

namespace dynet {

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clears a non-sticky error so that later calls do not report it again
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
}

namespace {
using dev::CudaPrims;

thread_local int t_current = -1;  // the calling thread's current CUDA device, as last set here

template <class At>
__global__ void squared_norm_kernel(size_t n, At at, double* out) {
  __shared__ double part[dev::cuda_detail::kThreads];
  double s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const double v = at(i);
    s += v * v;
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
}  // namespace

CudaDevice::CudaDevice(int ordinal) : Device(ordinal, DeviceType::GPU, "GPU:" + std::to_string(ordinal)) {
  backend = kCudaBackend;
  make_current();
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublas_check(cublasCreate(&blas), "cublasCreate");
  cublas_check(cublasSetStream(blas, stream), "cublasSetStream");
  cuda_check(cudaMalloc(&norm_, sizeof(double)), "cudaMalloc");
  int unified = 0;  // (every 64-bit process has it: kernels read pinned host memory at its host address)
  cuda_check(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, ordinal), "cudaDeviceGetAttribute");
  unified_addressing_ = unified != 0;
}

CudaDevice::~CudaDevice() {
  // Devices live until the process ends; the driver may already be shutting down, so errors are ignored.
  make_current();
  if (blas) cublasDestroy(blas);
  if (stream) cudaStreamDestroy(stream);
  cudaFree(norm_);
  cudaFree(device_staging_);
  cudaFreeHost(host_staging_);
  cudaFreeHost(later_host_);
  for (cudaEvent_t e : later_done_)
    if (e) cudaEventDestroy(e);
}

namespace {
// Pinned host memory of `bytes` and n events, made on first use.
void make_pinned_with_events(unsigned char*& host, size_t bytes, cudaEvent_t* events, size_t n) {
  if (host) return;
  cuda_check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  for (size_t k = 0; k < n; ++k) cuda_check(cudaEventCreateWithFlags(&events[k], cudaEventDisableTiming), "cudaEventCreate");
}
// Whether the device has passed e. (A NotReady query is no error, but would be left as the last one, which
// launch checks read.)
bool event_passed(cudaEvent_t e) {
  const cudaError_t state = cudaEventQuery(e);
  if (state == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  cuda_check(state, "cudaEventQuery");
  return true;
}
}  // namespace

void CudaDevice::make_current() const {
  if (t_current == device_id) return;
  cuda_check(cudaSetDevice(device_id), "cudaSetDevice");
  t_current = device_id;
}

namespace {
// std::bad_alloc (clearing CUDA's sticky last error) when an allocation call failed. A separate statement
// from the call: as an argument beside the call, the pointer it sets may be read before the call runs.
void check_allocation(cudaError_t status) {
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
}
}  // namespace

void* CudaDevice::allocate(size_t bytes) {
  make_current();
  void* p = nullptr;
  check_allocation(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  return p;
}

void CudaDevice::deallocate(void* p) {
  if (!p) return;
  make_current();
  count_work(0, 0, 0, true);
  wait_for_stream();  // what is queued may still read it (cudaFree would wait too, untimed)
  cudaFree(p);
}

void* CudaDevice::allocate_parameters(size_t bytes) {
  make_current();
  void* p = nullptr;
  check_allocation(cudaMallocManaged(&p, std::max<size_t>(bytes, 1)));
  cuda_check(cudaMemsetAsync(p, 0, bytes, stream), "cudaMemsetAsync");
  return p;
}

void CudaDevice::deallocate_parameters(void* p) { deallocate(p); }

void* CudaDevice::device_staging(size_t bytes) {
  if (bytes > device_staging_bytes_) {
    make_current();
    cudaFree(device_staging_);  // synchronises: earlier work that reads it has finished
    device_staging_ = nullptr;
    device_staging_bytes_ = 0;
    cuda_check(cudaMalloc(&device_staging_, bytes), "cudaMalloc (staging)");
    device_staging_bytes_ = bytes;
  }
  return device_staging_;
}

void* CudaDevice::host_staging(size_t bytes) {
  if (bytes > host_staging_bytes_) {
    cudaFreeHost(host_staging_);
    host_staging_ = nullptr;
    host_staging_bytes_ = 0;
    cuda_check(cudaMallocHost(&host_staging_, bytes), "cudaMallocHost (staging)");
    host_staging_bytes_ = bytes;
  }
  return host_staging_;
}

void CudaDevice::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  count_work(0, 0, bytes);
  // Small reads (losses, values) through the pinned buffer; large ones straight into pageable memory.
  constexpr size_t kStaged = size_t(1) << 22;
  if (bytes <= kStaged) {
    std::lock_guard<std::mutex> lock(staging_mutex_);
    void* h = host_staging(kStaged);
    cuda_check(cudaMemcpyAsync(h, src, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (to host)");
    wait_for_stream();
    std::memcpy(host_dst, h, bytes);
    return;
  }
  cuda_check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (to host)");
  wait_for_stream();
}

// A thread's pinned memory on one GPU, in chunks used in turn: the source of its small copies to the device (one
// from pageable memory costs the host more and may wait for the device, as the driver stages it) and what it
// stages for kernels to read in place. An event is recorded when the thread leaves a chunk; chunk c is reused
// once the event of chunk c + 1 has passed: the kernels that read c's last data were queued while c + 1 was
// current at the latest (every caller queues them before it stages more than a chunk). Per thread, so that
// another thread's staging cannot lap data whose kernel is not queued yet.
struct CudaDevice::HostRing {
  static constexpr size_t kChunks = 16;
  unsigned char* host = nullptr;
  cudaEvent_t left[kChunks] = {};
  size_t chunk = 0, offset = 0;
  ~HostRing() {  // (errors ignored, as the device's own)
    cudaFreeHost(host);
    for (cudaEvent_t e : left)
      if (e) cudaEventDestroy(e);
  }
};
struct CudaDevice::RingLease {
  CudaDevice* device;
  HostRing* ring;
  ~RingLease() {
    std::lock_guard<std::mutex> lock(device->rings_mutex_);
    device->free_rings_.push_back(ring);
  }
};

const void* CudaDevice::place_in_ring(const void* host, size_t bytes) {
  thread_local std::vector<std::unique_ptr<RingLease>> leases;  // by device ordinal
  if (leases.size() <= size_t(device_id)) leases.resize(device_id + 1);
  std::unique_ptr<RingLease>& lease = leases[device_id];
  if (!lease) {
    std::lock_guard<std::mutex> lock(rings_mutex_);
    if (free_rings_.empty()) {
      rings_.push_back(std::make_unique<HostRing>());
      make_pinned_with_events(rings_.back()->host, kRingChunk * HostRing::kChunks, rings_.back()->left, HostRing::kChunks);
      free_rings_.push_back(rings_.back().get());
    }
    lease.reset(new RingLease{this, free_rings_.back()});
    free_rings_.pop_back();
  }
  HostRing& r = *lease->ring;
  if (r.offset + bytes > kRingChunk) {
    cuda_check(cudaEventRecord(r.left[r.chunk], stream), "cudaEventRecord");
    r.chunk = (r.chunk + 1) % HostRing::kChunks;
    r.offset = 0;
    if (!event_passed(r.left[(r.chunk + 1) % HostRing::kChunks])) {
      count_work(0, 0, 0, true);
      wait_for_stream();
    }
  }
  unsigned char* at = r.host + r.chunk * kRingChunk + r.offset;
  if (bytes) std::memcpy(at, host, bytes);
  r.offset += (bytes + 63) & ~size_t(63);
  return at;
}

void CudaDevice::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  count_work(0, bytes);
  // From pageable memory the call returns once the source has been staged, so the caller may reuse it.
  const void* from = bytes > kRingChunk ? host_src : place_in_ring(host_src, bytes);
  cuda_check(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (from host)");
}

const void* CudaDevice::stage(const void* host, size_t bytes) {
  if (!unified_addressing_ || !detail::stages(bytes)) return nullptr;
  make_current();
  count_staged(bytes);
  return place_in_ring(host, bytes);
}

template <class T>
const T* CudaDevice::staged_or_copied(const T* host, size_t n, std::unique_lock<std::mutex>& hold) {
  if (const void* staged = stage(host, n * sizeof(T))) return static_cast<const T*>(staged);
  hold.lock();
  T* d = static_cast<T*>(device_staging(n * sizeof(T)));
  copy_from_host(d, host, n * sizeof(T));
  return d;
}

void CudaDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  count_work(1);
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (on device)");
}

void CudaDevice::accumulate_from_host(float* y, const float* host_x, size_t n) {
  if (n == 0) return;
  std::unique_lock<std::mutex> hold(staging_mutex_, std::defer_lock);
  const float* x = staged_or_copied(host_x, n, hold);
  CudaPrims::for_each(this, n, [=] __host__ __device__(size_t i) { y[i] += x[i]; });
}

void CudaDevice::fill(float* x, size_t n, float value) {
  CudaPrims::for_each(this, n, [=] __host__ __device__(size_t i) { x[i] = value; });
}

void CudaDevice::axpy(float a, const float* x, float* y, size_t n) {
  CudaPrims::for_each(this, n, [=] __host__ __device__(size_t i) { y[i] += a * x[i]; });
}

void CudaDevice::scale(float* x, size_t n, float a) {
  CudaPrims::for_each(this, n, [=] __host__ __device__(size_t i) { x[i] *= a; });
}

template <class At>
void CudaDevice::add_squares(size_t n, At at, double* sum) {
  count_work(1);
  squared_norm_kernel<<<std::min(dev::cuda_detail::blocks_for(n), 1024u), dev::cuda_detail::kThreads, 0, stream>>>(n, at, sum);
  cuda_check(cudaGetLastError(), "squared_norm kernel launch");
}

namespace {
// Value i of the segments a list describes (count pointers, then where each starts): a ListByValue or a
// device pointer to the list.
template <class List>
struct SegmentValue {
  List l;
  size_t count;
  __device__ float operator()(size_t i) const {
    const size_t k = dev::segment_of(l, count, count, i);
    return reinterpret_cast<const float*>(l[k])[i - l[count + k]];
  }
};
}  // namespace

void CudaDevice::add_squared_norms(const float* const* xs, const size_t* ns, size_t count, double* sum) {
  // The pointers, then where each segment starts among all the values (count + 1 offsets), in one list.
  thread_local std::vector<uintptr_t> lists;
  lists.resize(2 * count + 1);
  size_t total = 0;
  for (size_t k = 0; k < count; ++k) {
    lists[k] = reinterpret_cast<uintptr_t>(xs[k]);
    lists[count + k] = total;
    total += ns[k];
  }
  lists[2 * count] = total;
  if (total == 0) return;
  make_current();
  with_list(lists.data(), lists.size(), [&](auto l) { add_squares(total, SegmentValue<decltype(l)>{l, count}, sum); });
}
void CudaDevice::add_squared_norm_rows(const float* x, const unsigned* rows, size_t n, size_t row, double* sum) {
  if (n == 0 || row == 0) return;
  make_current();
  std::unique_lock<std::mutex> hold(staging_mutex_, std::defer_lock);
  const unsigned* r = staged_or_copied(rows, n, hold);
  add_squares(n * row, [=] __device__(size_t i) { return x[size_t(r[i / row]) * row + i % row]; }, sum);
}
double CudaDevice::squared_norm(const float* x, size_t n) {
  if (n == 0) return 0;
  make_current();
  std::lock_guard<std::mutex> lock(staging_mutex_);  // norm_ is shared
  count_work(1, 0, sizeof(double));                  // the memset (add_squares counts the kernel), the read
  cuda_check(cudaMemsetAsync(norm_, 0, sizeof(double), stream), "cudaMemsetAsync");
  add_squares(n, [=] __device__(size_t i) { return x[i]; }, norm_);
  double s = 0;
  cuda_check(cudaMemcpyAsync(&s, norm_, sizeof(double), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  wait_for_stream();
  return s;
}

void CudaDevice::gather_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row, bool add) {
  if (n == 0 || row == 0) return;
  std::unique_lock<std::mutex> hold(staging_mutex_, std::defer_lock);
  const unsigned* r = staged_or_copied(rows, n, hold);
  CudaPrims::for_each(this, n * row, [=] __host__ __device__(size_t i) {
    const size_t k = i / row, j = i % row;
    const float v = src[size_t(r[k]) * row + j];
    dst[i] = add ? dst[i] + v : v;
  });
}

void CudaDevice::scatter_add_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row) {
  if (n == 0 || row == 0) return;
  std::unique_lock<std::mutex> hold(staging_mutex_, std::defer_lock);
  const unsigned* r = staged_or_copied(rows, n, hold);
  CudaPrims::for_each(this, n * row, [=] __host__ __device__(size_t i) {
    const size_t k = i / row, j = i % row;
    dev::atomic_add(dst + size_t(r[k]) * row + j, src[i]);  // rows may repeat
  });
}

namespace {
// A short pointer list as a kernel parameter (detail::kListBytesByValue).
template <class T>
struct ListByValue {
  T v[detail::kListBytesByValue / sizeof(T)];
  ListByValue(const T* host, size_t count) { std::copy(host, host + count, v); }
  __host__ __device__ const T& operator[](size_t i) const { return v[i]; }
};
}  // namespace

template <class T, class Kernel>
void CudaDevice::with_list(const T* host, size_t count, Kernel kernel) {
  if (count * sizeof(T) <= detail::kListBytesByValue) return kernel(ListByValue<T>(host, count));
  std::unique_lock<std::mutex> hold(staging_mutex_, std::defer_lock);
  kernel(staged_or_copied(host, count, hold));
}

namespace {
// Element i of the segment lists laid out as detail::segment_list_words says (`pointers` pointers, then the
// lists' blocks, ns, first pointers and first floats): copied into its block (gather) or added from it.
// List: a ListByValue or a device pointer to the list.
template <class List>
void segment_lists_kernel(CudaDevice* d, List l, size_t pointers, size_t nlists, size_t total, bool gather) {
  CudaPrims::for_each(d, total, [=] __host__ __device__(size_t i) {
    const size_t q = dev::segment_of(l, pointers + 3 * nlists, nlists, i);
    const size_t n = l[pointers + nlists + q], at = i - l[pointers + 3 * nlists + q];
    float* const block = reinterpret_cast<float*>(l[pointers + q]) + at;
    float* const p = reinterpret_cast<float*>(l[l[pointers + 2 * nlists + q] + at / n]) + at % n;
    if (gather)
      *block = *p;
    else
      dev::atomic_add(p, *block);  // pointers may repeat
  });
}

}  // namespace

// One kernel for all the lists, their words in its parameters or uploaded first: a batch's arguments of 64
// members each are one launch, not a copy per member and argument.
void CudaDevice::segment_lists(const SegmentLists& l, bool gather) {
  const size_t total = detail::segment_list_floats(l);
  if (total == 0) return;
  thread_local std::vector<uintptr_t> words;
  words.resize(detail::segment_list_words(l));
  const size_t pointers = words.size() - 4 * l.nlists - 1, L = l.nlists;
  for (size_t k = 0; k < pointers; ++k) words[k] = reinterpret_cast<uintptr_t>(l.ptrs[k]);
  for (size_t q = 0, first = 0, start = 0; q < L; ++q) {
    words[pointers + q] = reinterpret_cast<uintptr_t>(l.blocks[q]);
    words[pointers + L + q] = l.ns[q];
    words[pointers + 2 * L + q] = first;
    words[pointers + 3 * L + q] = start;
    first += l.counts[q];
    start += l.counts[q] * l.ns[q];
  }
  words[pointers + 4 * L] = total;
  with_list(words.data(), words.size(), [&](auto w) { segment_lists_kernel(this, w, pointers, L, total, gather); });
}
void CudaDevice::gather_lists(const SegmentLists& l) { segment_lists(l, true); }
void CudaDevice::scatter_add_lists(const SegmentLists& l) { segment_lists(l, false); }

void CudaDevice::add_product_nt(float* dW, const float* G, const float* X, size_t m, size_t k, size_t n) {
  if (!m || !k || !n) return;
  make_current();
  count_work(1);
  const float one = 1.f;
  cublas_check(cublasSgemm_64(blas, CUBLAS_OP_N, CUBLAS_OP_T, m, k, n, &one, G, m, X, k, &one, dW, m), "cublasSgemm_64");
}

void CudaDevice::wait_for_stream() {
  const auto start = std::chrono::steady_clock::now();
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  count_wait_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

void CudaDevice::synchronize() {
  make_current();
  count_work(0, 0, 0, true);
  wait_for_stream();
}

unsigned CudaDevice::read_later(const void* src, size_t bytes) {
  if (bytes > kLaterReadBytes)
    throw std::invalid_argument(name + ": read_later of " + std::to_string(bytes) + " bytes (at most " +
                                std::to_string(kLaterReadBytes) + ")");
  make_current();
  std::lock_guard<std::mutex> lock(later_mutex_);
  make_pinned_with_events(later_host_, kLaterReads * kLaterReadBytes, later_done_, kLaterReads);
  const unsigned k = static_cast<unsigned>(std::find(later_used_, later_used_ + kLaterReads, false) - later_used_);
  if (k == kLaterReads) return kNoTicket;
  count_later_read(bytes);
  if (bytes)
    cuda_check(cudaMemcpyAsync(later_host_ + k * kLaterReadBytes, src, bytes, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync (later read)");
  cuda_check(cudaEventRecord(later_done_[k], stream), "cudaEventRecord");
  later_used_[k] = true;
  later_bytes_[k] = bytes;
  return k;
}

bool CudaDevice::collect(unsigned ticket, void* host_dst, bool wait) {
  make_current();
  std::lock_guard<std::mutex> lock(later_mutex_);
  if (ticket >= kLaterReads || !later_used_[ticket])
    throw std::invalid_argument(name + ": collect of ticket " + std::to_string(ticket) + ", not outstanding");
  if (!event_passed(later_done_[ticket])) {
    if (!wait) return false;
    count_work(0, 0, 0, true);
    wait_for_stream();
  }
  std::memcpy(host_dst, later_host_ + ticket * kLaterReadBytes, later_bytes_[ticket]);
  later_used_[ticket] = false;
  return true;
}

// ---- registration ----

namespace {
int count_gpus(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device on this machine";
  return n;
}
std::unique_ptr<Device> create_gpu(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }
const GpuRuntime kRuntime{count_gpus, create_gpu};
const bool kRegistered = (set_gpu_runtime(&kRuntime), true);
}  // namespace

}  // namespace dynet
