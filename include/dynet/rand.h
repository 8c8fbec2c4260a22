// Random helpers (DyNet's dynet/rand.h); they draw from the calling thread's engine (random_engine()).
#pragma once

#include "dynet/tensor.h"

namespace dynet {

// rand01, rand0n and rand_normal are declared in dynet/tensor.h.
// A fresh seed from std::random_device.
int draw_random_seed();

}  // namespace dynet
