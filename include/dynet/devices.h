// Devices: where tensors live and kernels run. The CPU is always there; CUDA GPUs come with builds
// configured with -DDYNET_CUDA=ON and are chosen by --dynet-gpus, --dynet-devices or --dynet-gpu-ids.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dynet/device-structs.h"

namespace Eigen {
struct DefaultDevice;
}

namespace dynet {

// Work queued on a device, counted as a GPU runs it: kernel launches (cuBLAS calls and copies on the
// device included), waits of the host for the device (syncs: every download is one, and every freeing of
// device memory, which waits for the work queued), copies from the host (uploads; upload_bytes also counts
// what kernels read from the host in place, Device::stage) and to it (downloads) with their bytes, and the
// nanoseconds the host spent waiting (wait_ns: a step's time less these is the host's own). The emulated
// device counts what a GPU would for the same program (its waits take no time); the CPU, which runs its
// kernels inline, counts nothing. Totals since the process started.
struct DeviceCounters {
  uint64_t launches = 0, syncs = 0, uploads = 0, upload_bytes = 0, downloads = 0, download_bytes = 0, wait_ns = 0;
  // Fieldwise: the work between two readings (later - earlier), or on several devices (+=).
  DeviceCounters operator-(const DeviceCounters& o) const {
    return {launches - o.launches,   syncs - o.syncs,
            uploads - o.uploads,     upload_bytes - o.upload_bytes,
            downloads - o.downloads, download_bytes - o.download_bytes,
            wait_ns - o.wait_ns};
  }
  DeviceCounters& operator+=(const DeviceCounters& o) {
    launches += o.launches, syncs += o.syncs, uploads += o.uploads;
    upload_bytes += o.upload_bytes, downloads += o.downloads, download_bytes += o.download_bytes;
    wait_ns += o.wait_ns;
    return *this;
  }
  bool operator==(const DeviceCounters& o) const {
    return launches == o.launches && syncs == o.syncs && uploads == o.uploads && upload_bytes == o.upload_bytes &&
           downloads == o.downloads && download_bytes == o.download_bytes && wait_ns == o.wait_ns;
  }
};

// One device (DyNet's Device): a name ("CPU", "GPU:0"), the memory its tensors live in and the kernels
// that run there. Graph nodes run on their arguments' device (to_device moves values between devices);
// parameters live on the device they were created for (add_parameters(..., device)).
//
// The virtual functions are the engine's interface to the device's memory: allocate/deallocate give device
// memory (node values, gradients, scratch: the pools of each graph draw from here); allocate_parameters
// gives zeroed memory that the host may also read and write after synchronize() (parameters, trainer
// state). The rest moves data and runs the few kernels the engine itself needs. The base class implements
// them for host memory (the CPU).
struct Device {
  Device(int id, DeviceType t, std::string n);
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int device_id;    // ordinal among the devices of its type: GPU:1 has 1
  DeviceType type;
  std::string name;
  uint8_t index = 0;    // position in the device manager (0: the CPU); node records store it
  uint8_t backend = 0;  // which kernels run here (core/device.h: CPU, CUDA, emulated)

  virtual void* allocate(size_t bytes);  // throws std::bad_alloc when there is no memory
  virtual void deallocate(void* p);
  virtual void* allocate_parameters(size_t bytes);  // zeroed
  virtual void deallocate_parameters(void* p);
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes);
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes);
  // Host data (index and pointer lists) that kernels read where it lies instead of being copied first: a
  // copy of the bytes at host (at most kStageBytes) and the address the device's kernels read it at, valid
  // for the kernels the calling thread queues before it stages another kStageBytes; null where this device
  // does not (the CPU, larger data, DYNET_GPU_STAGING=copy in the environment): copy it to device memory then.
  // On a GPU, mapped pinned memory: no copy is queued, the kernels read it across the bus.
  static constexpr size_t kStageBytes = size_t(64) << 10;
  virtual const void* stage(const void* host, size_t bytes);
  virtual void copy(void* dst, const void* src, size_t bytes);  // both on this device
  virtual void accumulate_from_host(float* y, const float* host_x, size_t n);  // y += x
  virtual void fill(float* x, size_t n, float value);
  virtual void axpy(float a, const float* x, float* y, size_t n);  // y += a x
  virtual void scale(float* x, size_t n, float a);                 // x *= a
  virtual double squared_norm(const float* x, size_t n);           // Σ x², accumulated in double
  // *sum += Σ x² over the count segments xs[k] of ns[k] floats (the lists in host memory: one kernel), or
  // (add_squared_norm_rows) over rows rows[k] of x, rows of `row` floats, rows[] in host memory; sum a
  // double in this device's memory, without waiting: several sums read back at once cost one wait.
  virtual void add_squared_norms(const float* const* xs, const size_t* ns, size_t count, double* sum);
  virtual void add_squared_norm_rows(const float* x, const unsigned* rows, size_t n, size_t row, double* sum);
  // dst row k += src row rows[k] (add) or ← it: rows of `row` floats; rows[] in host memory.
  virtual void gather_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row, bool add);
  // dst row rows[k] += src row k (rows may repeat).
  virtual void scatter_add_rows(float* dst, const float* src, const unsigned* rows, size_t n, size_t row);
  // Several gathers or scatter-adds in one kernel: list q pairs the block blocks[q] (counts[q] segments of
  // ns[q] floats, one after another) with the next counts[q] pointers of ptrs. In host memory: the
  // autobatching executor concatenates and splits its members' values with these, a batch's lists at once.
  struct SegmentLists {
    float* const* blocks;
    const size_t* ns;
    const size_t* counts;
    size_t nlists;
    float* const* ptrs;
  };
  virtual void gather_lists(const SegmentLists& l);       // segment j of a block ← the floats at its pointer
  virtual void scatter_add_lists(const SegmentLists& l);  // the floats at its pointer += segment j (may repeat)
  // One list: dst segment k ← srcs[k] (n floats); dsts[k] += src segment k; add_segments: dsts[k] += srcs[k].
  void gather_segments(float* dst, const float* const* srcs, size_t count, size_t n);
  void scatter_add_segments(float* const* dsts, const float* src, size_t count, size_t n);
  void add_segments(float* const* dsts, const float* const* srcs, const size_t* ns, size_t count);
  // dW += G · Xᵀ, column-major: G m × n, X k × n, dW m × k (a weight's gradient from n columns at once).
  virtual void add_product_nt(float* dW, const float* G, const float* X, size_t m, size_t k, size_t n);
  // Waits until everything queued on the device is done (host reads of device memory come after it).
  virtual void synchronize();
  // A small read the host collects later instead of waiting for it now (the trainer's gradient norm is
  // collected with the next step's loss). read_later queues a copy of bytes <= kLaterReadBytes from src and
  // returns its ticket, or kNoTicket while too many are outstanding (read it now instead). collect copies it
  // to host_dst and frees the ticket once it has arrived, and returns whether it had; it waits for it (a
  // sync) only when `wait`. A GPU's read arrives when the device reaches it, the emulated device's with its
  // next wait, the CPU's at once.
  static constexpr size_t kLaterReadBytes = 64;
  static constexpr unsigned kNoTicket = ~0u, kLaterReads = 32;  // at most kLaterReads outstanding
  virtual unsigned read_later(const void* src, size_t bytes);
  virtual bool collect(unsigned ticket, void* host_dst, bool wait);

  DeviceCounters counters() const;
  // For the implementations of devices and of kernel launches: counts work queued here (not on the CPU), a
  // copy of each size that is not 0 (a download waits: it counts as a sync too).
  void count_work(unsigned launches, size_t upload_bytes = 0, size_t download_bytes = 0, bool sync = false) {
    if (backend) count_queued(launches, upload_bytes, download_bytes, sync);
  }
  void count_wait_ns(uint64_t ns) { wait_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void count_later_read(size_t bytes);  // a download that waits for nothing (read_later)
  void count_staged(size_t bytes);      // bytes kernels read from the host in place (stage): no upload queued

 private:
  void count_queued(unsigned launches, size_t upload_bytes, size_t download_bytes, bool sync);
  struct LaterReads;  // read_later's slots (device.cc)
  std::unique_ptr<LaterReads> later_;
  std::atomic<uint64_t> launches_{0}, syncs_{0}, uploads_{0}, upload_bytes_{0}, downloads_{0}, download_bytes_{0},
      wait_ns_{0};
};

// The CPU: host memory, kernels run on the calling thread. edevice is the Eigen device DyNet-style node
// code evaluates tensor expressions on (`tvec(fx).device(*dev.edevice) = ...`, with dynet/tensor-eigen.h).
struct Device_CPU : Device {
  typedef Eigen::DefaultDevice EigenDevice;
  Device_CPU(int id, Eigen::DefaultDevice* edevice) : Device(id, DeviceType::CPU, "CPU"), edevice(edevice) {}
  Eigen::DefaultDevice* edevice;
};

// The process-wide CPU device ("CPU").
Device_CPU* cpu_device();
// get_device_manager()->get_global_device(name).
Device* get_device_manager_device(const std::string& name);
std::vector<Device*> available_devices();

// The process's devices (DyNet's DeviceManager): the CPU first, then the GPUs initialize() set up, in
// the order they were asked for.
class DeviceManager {
 public:
  size_t num_devices() const { return devices_.size(); }
  Device* operator[](size_t i) const { return get(i); }
  Device* get(size_t i) const;  // throws std::out_of_range past num_devices()
  std::vector<Device*> get_devices() const;
  // "CPU" (or "cpu"), "GPU:0", ...; throws std::invalid_argument naming the device and those there are.
  Device* get_global_device(const std::string& name) const;
  // Takes ownership; gives the device its index (at most 255 devices).
  Device* add(std::unique_ptr<Device> d);

 private:
  friend DeviceManager* get_device_manager();
  DeviceManager();
  std::vector<std::unique_ptr<Device>> devices_;
};
DeviceManager* get_device_manager();

// Prints each device's pool sizes to std::cerr (DyNet's debugging aid). Our pools belong to graphs
// (and grow on demand), so this prints the initial sizes --dynet-mem set.
void show_pool_mem_info();

}  // namespace dynet
