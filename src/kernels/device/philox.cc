#include "kernels/device/philox.h"

#include "dynet/globals.h"

namespace dynet::rng {

void draw_keys(Key* out, size_t n) {
  std::mt19937& e = random_engine();
  for (size_t k = 0; k < n; ++k) {
    const uint32_t lo = uint32_t(e());
    out[k] = {lo, uint32_t(e())};
  }
}

}  // namespace dynet::rng
