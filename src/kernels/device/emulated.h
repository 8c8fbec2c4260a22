// The emulated device ("EMU:0"): a stand-in for a GPU in host memory. Its nodes run the device-neutral
// kernels (the code the CUDA pass compiles for GPUs) instantiated for the host, and all data moves
// through the Device interface as it does for a GPU, so the device path (per-device pools, kernel
// dispatch, to_device, parameters and trainer state on a device) is tested on machines without a GPU.
// Only the CUDA launch layer (src/kernels/cuda) is left out. Made on first use; tests use it.
#pragma once

#include "dynet/devices.h"

namespace dynet {

Device* emulated_device();

}  // namespace dynet
