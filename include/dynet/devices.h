// Devices: where tensors live. This build has the CPU; CUDA devices come with the GPU backend.
#pragma once

#include <string>
#include <vector>

#include "dynet/device-structs.h"

namespace Eigen {
struct DefaultDevice;
}

namespace dynet {

struct Device {
  Device(int id, DeviceType t, std::string n) : device_id(id), type(t), name(std::move(n)) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  int device_id;
  DeviceType type;
  std::string name;
};

// The CPU. edevice is the Eigen device DyNet-style node code evaluates tensor expressions on
// (`tvec(fx).device(*dev.edevice) = ...`, with dynet/tensor-eigen.h).
struct Device_CPU : Device {
  typedef Eigen::DefaultDevice EigenDevice;
  Device_CPU(int id, Eigen::DefaultDevice* edevice) : Device(id, DeviceType::CPU, "CPU"), edevice(edevice) {}
  Eigen::DefaultDevice* edevice;
};

// The process-wide CPU device ("CPU").
Device_CPU* cpu_device();
// Looks a device up by name ("CPU"); throws std::invalid_argument for unknown names.
Device* get_device_manager_device(const std::string& name);
std::vector<Device*> available_devices();

// DyNet's registry of devices (here: the CPU only).
class DeviceManager {
 public:
  size_t num_devices() const { return available_devices().size(); }
  Device* operator[](size_t i) const { return get(i); }
  // Throws std::out_of_range past num_devices().
  Device* get(size_t i) const;
  std::vector<Device*> get_devices() const { return available_devices(); }
  // "CPU" (or "cpu"); throws std::invalid_argument naming the unknown device otherwise.
  Device* get_global_device(const std::string& name) const { return get_device_manager_device(name); }
};
DeviceManager* get_device_manager();

// Prints each device's pool sizes to std::cerr (DyNet's debugging aid). Our pools belong to graphs
// (and grow on demand), so this prints the initial sizes --dynet-mem set.
void show_pool_mem_info();

}  // namespace dynet
