#include "kernels/device/emulated.h"

#include <memory>

#include "core/device.h"

namespace dynet {

namespace {
struct EmulatedDevice : Device {
  EmulatedDevice() : Device(0, DeviceType::GPU, "EMU:0") { backend = kEmulatedBackend; }
};
}  // namespace

Device* emulated_device() {
  static Device* d = get_device_manager()->add(std::make_unique<EmulatedDevice>());
  return d;
}

}  // namespace dynet
