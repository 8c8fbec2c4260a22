#include "core/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <unsupported/Eigen/CXX11/Tensor>  // Eigen::DefaultDevice, Device_CPU::edevice

namespace dynet {

// ---- host memory (the CPU, and the base of devices whose memory the host can address) ----

// read_later's slots for devices whose memory the host addresses: the value is copied at once (the
// emulated device runs its kernels as they are queued) and arrives with the next counted wait, as a GPU's
// would at the latest.
struct Device::LaterReads {
  struct Slot {
    bool used = false;
    uint64_t queued_at_sync = 0;  // the device's sync count when it was queued
    size_t bytes = 0;
    unsigned char data[kLaterReadBytes];
  };
  std::mutex mutex;
  std::vector<Slot> slots;
};

Device::Device(int id, DeviceType t, std::string n)
    : device_id(id), type(t), name(std::move(n)), later_(std::make_unique<LaterReads>()) {}
Device::~Device() = default;

void* Device::allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) & ~size_t(63));
  if (!p) throw std::bad_alloc();
  return p;
}
void Device::deallocate(void* p) {
  count_work(0, 0, 0, p != nullptr);  // as a GPU's: freeing waits for the work queued on the device
  std::free(p);
}
void* Device::allocate_parameters(size_t bytes) {
  void* p = allocate(bytes);
  std::memset(p, 0, bytes);
  return p;
}
void Device::deallocate_parameters(void* p) { deallocate(p); }
// Each entry point counts what the CUDA device's counts (src/kernels/cuda/device.cu): the emulated device
// stands in for a GPU in the counters too. The work itself is done by the helpers below, which count nothing.
namespace {
void add_scaled(float a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}
// A kernel reading `bytes` of host data, counted as CudaDevice queues it: a list of at most
// detail::kListBytesByValue in the kernel's parameters, else staged (Device::stage), else copied first.
void count_kernel_reading(Device& d, size_t bytes, bool list) {
  d.count_work(1);
  if (list && bytes <= detail::kListBytesByValue) return;
  if (detail::stages(bytes))
    d.count_staged(bytes);
  else
    d.count_work(0, bytes);
}
double sum_of_squares(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}
}  // namespace

// (Nothing to copy: an empty std::vector's data() may be null, which memcpy must not get even then.)
void Device::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  count_work(0, 0, bytes);
  std::memcpy(dst, src, bytes);
}
void Device::copy_from_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  count_work(0, bytes);
  std::memcpy(dst, src, bytes);
}
bool detail::stage_in_place() {
  static const bool in_place = [] {
    const char* staging = std::getenv("DYNET_GPU_STAGING");
    return !(staging && std::string(staging) == "copy");
  }();
  return in_place;
}
// The emulated device stages as a GPU does: its kernels run as they are queued, so the copy into a ring of the
// calling thread only keeps what was staged apart from what the caller writes next.
const void* Device::stage(const void* host, size_t bytes) {
  if (backend == kCpuBackend || !detail::stages(bytes)) return nullptr;
  count_staged(bytes);
  thread_local std::vector<unsigned char> ring(4 * kStageBytes);
  thread_local size_t offset = 0;
  if (offset + bytes > ring.size()) offset = 0;
  unsigned char* at = ring.data() + offset;
  if (bytes) std::memcpy(at, host, bytes);
  offset += (bytes + 63) & ~size_t(63);
  return at;
}
void Device::copy(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  count_work(1);
  std::memmove(dst, src, bytes);
}
void Device::accumulate_from_host(float* y, const float* x, size_t n) {
  if (!n) return;
  count_kernel_reading(*this, n * sizeof(float), false);
  add_scaled(1.f, x, y, n);
}
void Device::fill(float* x, size_t n, float value) {
  count_work(n != 0);
  std::fill(x, x + n, value);
}
void Device::axpy(float a, const float* x, float* y, size_t n) {
  count_work(n != 0);
  add_scaled(a, x, y, n);
}
void Device::scale(float* x, size_t n, float a) {
  count_work(n != 0);
  for (size_t i = 0; i < n; ++i) x[i] *= a;
}
double Device::squared_norm(const float* x, size_t n) {
  if (!n) return 0;
  count_work(2, 0, sizeof(double));  // zeroing the sum, summing, reading it
  return sum_of_squares(x, n);
}
void Device::add_squared_norms(const float* const* xs, const size_t* ns, size_t count, double* sum) {
  if (std::all_of(ns, ns + count, [](size_t n) { return n == 0; })) return;
  count_kernel_reading(*this, (2 * count + 1) * sizeof(uintptr_t), true);  // the pointers, the offsets
  for (size_t k = 0; k < count; ++k) *sum += sum_of_squares(xs[k], ns[k]);
}
void Device::add_squared_norm_rows(const float* x, const unsigned* rows, size_t n, size_t row, double* sum) {
  if (!n || !row) return;
  count_kernel_reading(*this, n * sizeof(unsigned), false);
  for (size_t k = 0; k < n; ++k) *sum += sum_of_squares(x + size_t(rows[k]) * row, row);
}
void Device::gather_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row, bool add) {
  if (!n || !row) return;
  count_kernel_reading(*this, n * sizeof(unsigned), false);
  for (size_t k = 0; k < n; ++k) {
    const float* s = src + size_t(rows[k]) * row;
    float* d = dst + k * row;
    if (add)
      for (size_t j = 0; j < row; ++j) d[j] += s[j];
    else
      std::memcpy(d, s, row * sizeof(float));
  }
}
void Device::scatter_add_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row) {
  if (!n || !row) return;
  count_kernel_reading(*this, n * sizeof(unsigned), false);
  for (size_t k = 0; k < n; ++k) add_scaled(1.f, src + k * row, dst + size_t(rows[k]) * row, row);
}
// (As a GPU: one kernel reading the list's words, segment_list_words.)
void Device::gather_lists(const SegmentLists& l) {
  if (!detail::segment_list_floats(l)) return;
  count_kernel_reading(*this, detail::segment_list_words(l) * sizeof(uintptr_t), true);
  for (size_t q = 0, at = 0; q < l.nlists; ++q)
    for (size_t j = 0; j < l.counts[q]; ++j) std::memmove(l.blocks[q] + j * l.ns[q], l.ptrs[at++], l.ns[q] * sizeof(float));
}
void Device::scatter_add_lists(const SegmentLists& l) {
  if (!detail::segment_list_floats(l)) return;
  count_kernel_reading(*this, detail::segment_list_words(l) * sizeof(uintptr_t), true);
  for (size_t q = 0, at = 0; q < l.nlists; ++q)
    for (size_t j = 0; j < l.counts[q]; ++j) add_scaled(1.f, l.blocks[q] + j * l.ns[q], l.ptrs[at++], l.ns[q]);
}
void Device::gather_segments(float* dst, const float* const* srcs, size_t count, size_t n) {
  gather_lists({&dst, &n, &count, 1, const_cast<float* const*>(srcs)});
}
void Device::scatter_add_segments(float* const* dsts, const float* src, size_t count, size_t n) {
  float* block = const_cast<float*>(src);
  scatter_add_lists({&block, &n, &count, 1, dsts});
}
void Device::add_segments(float* const* dsts, const float* const* srcs, const size_t* ns, size_t count) {
  thread_local std::vector<size_t> ones;
  ones.assign(count, 1);
  scatter_add_lists({const_cast<float* const*>(srcs), ns, ones.data(), count, dsts});
}
void Device::add_product_nt(float* dW, const float* G, const float* X, size_t m, size_t k, size_t n) {
  if (!m || !k || !n) return;
  count_work(1);
  for (size_t c = 0; c < n; ++c)
    for (size_t j = 0; j < k; ++j) add_scaled(X[j + c * k], G + c * m, dW + j * m, m);
}
void Device::synchronize() { count_work(0, 0, 0, true); }
unsigned Device::read_later(const void* src, size_t bytes) {
  if (bytes > kLaterReadBytes)
    throw std::invalid_argument(name + ": read_later of " + std::to_string(bytes) + " bytes (at most " +
                                std::to_string(kLaterReadBytes) + ")");
  std::lock_guard<std::mutex> lock(later_->mutex);
  auto& slots = later_->slots;
  auto it = std::find_if(slots.begin(), slots.end(), [](const LaterReads::Slot& s) { return !s.used; });
  if (it == slots.end()) {
    if (slots.size() == kLaterReads) return kNoTicket;
    it = slots.insert(slots.end(), LaterReads::Slot{});
  }
  count_later_read(bytes);
  it->used = true;
  it->queued_at_sync = syncs_.load();
  it->bytes = bytes;
  if (bytes) std::memcpy(it->data, src, bytes);
  return static_cast<unsigned>(it - slots.begin());
}
bool Device::collect(unsigned ticket, void* host_dst, bool wait) {
  uint64_t queued_at_sync = 0;
  {
    std::lock_guard<std::mutex> lock(later_->mutex);
    if (ticket >= later_->slots.size() || !later_->slots[ticket].used)
      throw std::invalid_argument(name + ": collect of ticket " + std::to_string(ticket) + ", not outstanding");
    queued_at_sync = later_->slots[ticket].queued_at_sync;
  }
  if (backend && syncs_.load() == queued_at_sync) {  // no wait since it was queued: not there yet on a GPU
    if (!wait) return false;
    synchronize();
  }
  std::lock_guard<std::mutex> lock(later_->mutex);
  LaterReads::Slot& slot = later_->slots[ticket];  // (the vector may have grown meanwhile)
  if (slot.bytes) std::memcpy(host_dst, slot.data, slot.bytes);
  slot.used = false;
  return true;
}

const float* device_ones(Device* dev, size_t n) {
  struct Ones {
    Device* device;
    float* p;
    size_t n;
  };
  static std::mutex mutex;
  // Every buffer is kept (a pass's deferred products may still read a smaller one), until the process ends.
  static auto& buffers = *new std::vector<Ones>;
  std::lock_guard<std::mutex> lock(mutex);
  const Ones* largest = nullptr;
  for (const Ones& o : buffers)
    if (o.device == dev && (!largest || o.n > largest->n)) largest = &o;
  if (largest && largest->n >= n) return largest->p;
  const size_t size = std::max<size_t>({n, 1024, largest ? 2 * largest->n : 0});
  float* p = static_cast<float*>(dev->allocate(size * sizeof(float)));
  dev->fill(p, size, 1.f);
  buffers.push_back({dev, p, size});
  return p;
}

DeviceCounters Device::counters() const {
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return {get(launches_),  get(syncs_),          get(uploads_), get(upload_bytes_),
          get(downloads_), get(download_bytes_), get(wait_ns_)};
}
void Device::count_later_read(size_t bytes) {
  if (!backend || !bytes) return;
  downloads_.fetch_add(1, std::memory_order_relaxed);
  download_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}
void Device::count_staged(size_t bytes) {
  if (backend && bytes) upload_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}
void Device::count_queued(unsigned launches, size_t upload_bytes, size_t download_bytes, bool sync) {
  auto add = [](std::atomic<uint64_t>& c, uint64_t n) {
    if (n) c.fetch_add(n, std::memory_order_relaxed);
  };
  add(launches_, launches);
  add(uploads_, upload_bytes != 0);
  add(upload_bytes_, upload_bytes);
  add(downloads_, download_bytes != 0);
  add(download_bytes_, download_bytes);
  add(syncs_, sync || download_bytes);
}

// ---- the device manager ----

namespace detail {
Device* g_devices[256] = {};
bool g_multi_device = false;
}  // namespace detail

DeviceManager::DeviceManager() {
  static Eigen::DefaultDevice eigen_cpu;
  add(std::make_unique<Device_CPU>(0, &eigen_cpu));
}

DeviceManager* get_device_manager() {
  // Never destroyed: graphs and parameters that die during static destruction still find their devices.
  static DeviceManager* manager = new DeviceManager;
  return manager;
}

Device* DeviceManager::add(std::unique_ptr<Device> d) {
  if (devices_.size() >= 255) throw std::runtime_error("DeviceManager: at most 255 devices");
  for (const auto& e : devices_)
    if (e->name == d->name) throw std::invalid_argument("DeviceManager: device " + d->name + " exists already");
  d->index = static_cast<uint8_t>(devices_.size());
  detail::g_devices[d->index] = d.get();
  if (d->index > 0) detail::g_multi_device = true;
  devices_.push_back(std::move(d));
  return devices_.back().get();
}

Device* DeviceManager::get(size_t i) const {
  if (i >= devices_.size())
    throw std::out_of_range("DeviceManager::get: device " + std::to_string(i) + " of " +
                            std::to_string(devices_.size()));
  return devices_[i].get();
}

std::vector<Device*> DeviceManager::get_devices() const {
  std::vector<Device*> r;
  for (const auto& d : devices_) r.push_back(d.get());
  return r;
}

Device* DeviceManager::get_global_device(const std::string& name) const {
  const std::string upper = name == "cpu" ? "CPU" : name;
  std::string have;
  for (const auto& d : devices_) {
    if (d->name == upper) return d.get();
    have += (have.empty() ? "" : ", ") + d->name;
  }
  throw std::invalid_argument("get_device: unknown device '" + name + "' (devices: " + have + ")");
}

Device_CPU* cpu_device() { return static_cast<Device_CPU*>(get_device_manager()->get(0)); }
Device* get_device_manager_device(const std::string& name) { return get_device_manager()->get_global_device(name); }
std::vector<Device*> available_devices() { return get_device_manager()->get_devices(); }

// ---- per-device kernels ----

namespace {
// Constant-initialised, like the op registry, so static initialisers of any file may register.
constinit std::vector<DeviceKernels> g_kernels[kNumBackends];
// Kernels registered before their op (another file's initialiser, or the CUDA pass's): claimed by register_op.
struct UnclaimedKernels {
  const char* op;
  Backend backend;
  DeviceKernels kernels;
};
constinit std::vector<UnclaimedKernels> g_unclaimed;
const GpuRuntime* g_gpu_runtime = nullptr;
std::mutex g_gpu_mutex;
}  // namespace

void register_device_kernels(OpId op, Backend backend, DeviceKernels k) {
  std::vector<DeviceKernels>& t = g_kernels[backend];
  if (t.size() <= op) t.resize(op + 1);
  t[op] = k;
}

void register_device_kernels(const char* op, Backend backend, DeviceKernels k) {
  for (size_t i = 0; i < op_registry().size(); ++i)
    if (std::strcmp(op_registry()[i].name, op) == 0) return register_device_kernels(static_cast<OpId>(i), backend, k);
  g_unclaimed.push_back({op, backend, k});
}

namespace detail {
void claim_device_kernels(OpId op) {
  const char* name = op_def(op).name;
  std::erase_if(g_unclaimed, [&](const UnclaimedKernels& u) {
    if (std::strcmp(u.op, name) != 0) return false;
    register_device_kernels(op, u.backend, u.kernels);
    return true;
  });
}
std::vector<std::string> unclaimed_device_kernels() {
  std::vector<std::string> r;
  for (const UnclaimedKernels& u : g_unclaimed) r.push_back(u.op);
  return r;
}
}  // namespace detail

const DeviceKernels* device_kernels(OpId op, Backend backend) {
  const std::vector<DeviceKernels>& t = g_kernels[backend];
  return op < t.size() && t[op].forward ? &t[op] : nullptr;
}

bool op_supports(OpId op, const Device& d) { return d.backend == kCpuBackend || device_kernels(op, Backend(d.backend)); }

const float* host_values(const Tensor& t, std::vector<float>* buf) {
  if (detail::host_addressable(t.device)) return t.v;
  buf->resize(t.d.size());
  t.device->copy_to_host(buf->data(), t.v, t.d.size() * sizeof(float));
  return buf->data();
}

void set_gpu_runtime(const GpuRuntime* rt) { g_gpu_runtime = rt; }
const GpuRuntime* gpu_runtime() { return g_gpu_runtime; }

int gpu_count(std::string* why) {
  if (!g_gpu_runtime) {
    if (why) *why = "this build of dynet has no CUDA backend (configure with -DDYNET_CUDA=ON)";
    return 0;
  }
  std::string reason;
  const int n = g_gpu_runtime->count(&reason);
  if (why) *why = reason;
  return n;
}

Device* gpu_device(int ordinal) {
  std::lock_guard<std::mutex> lock(g_gpu_mutex);
  const std::string name = "GPU:" + std::to_string(ordinal);
  DeviceManager& m = *get_device_manager();
  for (Device* d : m.get_devices())
    if (d->name == name) return d;
  std::string why;
  const int n = gpu_count(&why);
  if (ordinal < 0 || ordinal >= n)
    throw std::runtime_error(name + " is not available: " +
                             (n == 0 ? why : "this machine has " + std::to_string(n) + " usable GPU(s)"));
  return m.add(g_gpu_runtime->create(ordinal));
}

}  // namespace dynet
