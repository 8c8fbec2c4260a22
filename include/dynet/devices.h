// Devices: where tensors live. This build has the CPU; CUDA devices come with the GPU backend.
#pragma once

#include <string>
#include <vector>

namespace dynet {

enum class DeviceType { CPU, GPU };

struct Device {
  Device(int id, DeviceType t, std::string n) : device_id(id), type(t), name(std::move(n)) {}
  int device_id;
  DeviceType type;
  std::string name;
};

// The process-wide CPU device ("CPU").
Device* cpu_device();
// Looks a device up by name ("CPU"); throws std::invalid_argument for unknown names.
Device* get_device_manager_device(const std::string& name);
std::vector<Device*> available_devices();

}  // namespace dynet
