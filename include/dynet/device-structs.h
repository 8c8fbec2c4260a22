// Device kinds, memory pool ids and pool sizes (DyNet's dynet/device-structs.h).
#pragma once

#include <cstddef>
#include <string>

namespace dynet {

enum class DeviceType { CPU, GPU };
// Forward values, backward values, parameters, scratch.
enum class DeviceMempool { FXS = 0, DEDFS = 1, PS = 2, SCS = 3, NONE = 4 };

// Bytes in use in each of a device's four pools (DyNet's checkpoint record; --dynet-mem's layout).
struct DeviceMempoolSizes {
  size_t used[4] = {0, 0, 0, 0};
  DeviceMempoolSizes() = default;
  explicit DeviceMempoolSizes(size_t total) { used[0] = used[1] = used[2] = used[3] = total / 4; }
  DeviceMempoolSizes(size_t fxs, size_t dEdfs, size_t ps, size_t scs) : used{fxs, dEdfs, ps, scs} {}
  // "N" (MB for all four pools) or "F,B,P,S" (MB each), as --dynet-mem takes; throws
  // std::invalid_argument otherwise.
  explicit DeviceMempoolSizes(const std::string& descriptor);
};

}  // namespace dynet
