// A CUDA GPU as a dynet Device (CUDA builds only; nvcc compiles everything that includes this).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dynet/devices.h"

namespace dynet {

// Throws std::runtime_error "<what>: <CUDA's message>" unless e is cudaSuccess.
void cuda_check(cudaError_t e, const char* what);
void cublas_check(cublasStatus_t s, const char* what);

// One GPU: every kernel and copy of this device goes to its one stream, in order, so a pool's memory can
// be reused as soon as the host has queued the work that reads it. Node values, gradients and scratch
// come from cudaMalloc'd pool blocks; parameters and trainer state from managed memory (the host may
// read and write them after synchronize(): initialisers, model files, user code); reads back to the
// host go through a pinned staging buffer.
struct CudaDevice : Device {
  explicit CudaDevice(int ordinal);
  ~CudaDevice() override;

  // Makes this GPU the calling thread's current device (kernels and cuBLAS calls follow it).
  void make_current() const;

  void* allocate(size_t bytes) override;
  void deallocate(void* p) override;
  void* allocate_parameters(size_t bytes) override;
  void deallocate_parameters(void* p) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  const void* stage(const void* host, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void accumulate_from_host(float* y, const float* host_x, size_t n) override;
  void fill(float* x, size_t n, float value) override;
  void axpy(float a, const float* x, float* y, size_t n) override;
  void scale(float* x, size_t n, float a) override;
  double squared_norm(const float* x, size_t n) override;
  void add_squared_norms(const float* const* xs, const size_t* ns, size_t count, double* sum) override;
  void add_product_nt(float* dW, const float* G, const float* X, size_t m, size_t k, size_t n) override;
  void add_squared_norm_rows(const float* x, const unsigned* rows, size_t n, size_t row, double* sum) override;
  void gather_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row, bool add) override;
  void scatter_add_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row) override;
  void gather_lists(const SegmentLists& l) override;
  void scatter_add_lists(const SegmentLists& l) override;
  void synchronize() override;
  unsigned read_later(const void* src, size_t bytes) override;
  bool collect(unsigned ticket, void* host_dst, bool wait) override;

  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;

 private:
  // cudaStreamSynchronize, its time counted (DeviceCounters::wait_ns).
  void wait_for_stream();
  // Device memory of at least `bytes` for data copied from the host (row indices, host values); the
  // caller holds staging_mutex_ until the work that reads it is queued (the stream orders the rest).
  void* device_staging(size_t bytes);
  // n values of T from the host for the kernel queued next: staged, else copied to device_staging (locking
  // `hold`, on staging_mutex_, which the caller keeps until that kernel is queued).
  template <class T>
  const T* staged_or_copied(const T* host, size_t n, std::unique_lock<std::mutex>& hold);
  void* host_staging(size_t bytes);  // pinned, same rule
  // kernel(list) over `count` values of T from the host: the list travels in the kernel's parameters (a
  // ListByValue) when it fits detail::kListBytesByValue, else staged (or copied: staged_or_copied).
  template <class T, class Kernel>
  void with_list(const T* host, size_t count, Kernel kernel);
  // *sum += Σ at(i)² for i < n (at: a __device__ functor giving the i-th value), in double, queued.
  template <class At>
  void add_squares(size_t n, At at, double* sum);
  void segment_lists(const SegmentLists& l, bool gather);  // gather_lists or scatter_add_lists
  std::mutex staging_mutex_;
  void* device_staging_ = nullptr;
  size_t device_staging_bytes_ = 0;
  void* host_staging_ = nullptr;
  size_t host_staging_bytes_ = 0;
  double* norm_ = nullptr;  // squared_norm's accumulator (device memory)
  // read_later's slots: pinned host memory the copies land in, and an event recorded after each copy.
  std::mutex later_mutex_;
  unsigned char* later_host_ = nullptr;
  cudaEvent_t later_done_[kLaterReads] = {};
  size_t later_bytes_[kLaterReads] = {};
  bool later_used_[kLaterReads] = {};
  // The bytes at host copied into the calling thread's pinned ring on this GPU (HostRing, device.cu), for
  // the copies and kernels it queues next; at most kRingChunk.
  const void* place_in_ring(const void* host, size_t bytes);
  static constexpr size_t kRingChunk = size_t(1) << 18;
  struct HostRing;
  struct RingLease;  // a thread's hold on a ring, which goes back to free_rings_ when the thread ends
  std::mutex rings_mutex_;
  std::vector<std::unique_ptr<HostRing>> rings_;  // every ring made, kept until the device goes
  std::vector<HostRing*> free_rings_;              // those of threads that have ended
  bool unified_addressing_ = true;                 // kernels may read pinned host memory (else stage declines)
};

inline CudaDevice& cuda_device(Device* d) { return *static_cast<CudaDevice*>(d); }

}  // namespace dynet
