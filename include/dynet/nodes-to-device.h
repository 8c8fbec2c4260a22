// DyNet's the device-transfer node (dynet/nodes-to-device.h). ComputationGraph::add_function<Name>(args, ...) with these
// names builds our ops (see dynet/nodes-macros.h); they are not Node subclasses.
#pragma once

#include "dynet/nodes-macros.h"

namespace dynet {

DYNET_BUILTIN_NODE(ToDevice, 1, to_device)

}  // namespace dynet
