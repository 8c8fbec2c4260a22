// DyNet's GPU kernels (dynet/gpu-ops.h). This build has no GPU backend: each throws
// dynet::cuda_not_implemented naming itself.
#pragma once

#include "dynet/except.h"

namespace dynet {
namespace gpu {

#define DYNET_DETAIL_NO_GPU(name) throw cuda_not_implemented("dynet::gpu::" #name ": this build has no GPU backend")
inline void clip(int, float, float, float*) { DYNET_DETAIL_NO_GPU(clip); }
inline void const_init(int, float, float*) { DYNET_DETAIL_NO_GPU(const_init); }
inline void dense_to_sparse_assign(int, const unsigned*, float*, float*) { DYNET_DETAIL_NO_GPU(dense_to_sparse_assign); }
inline void sparse_to_dense_assign(int, const unsigned*, float*, float*) { DYNET_DETAIL_NO_GPU(sparse_to_dense_assign); }
inline void dense_to_sparse_subtract(int, const unsigned*, float*, float*) {
  DYNET_DETAIL_NO_GPU(dense_to_sparse_subtract);
}
inline void sparse_to_dense_block_assign_and_multiply(int, const unsigned*, int, float, float*, float*) {
  DYNET_DETAIL_NO_GPU(sparse_to_dense_block_assign_and_multiply);
}
inline void dense_to_sparse_block_add(int, const unsigned*, int, float*, float*) {
  DYNET_DETAIL_NO_GPU(dense_to_sparse_block_add);
}
#undef DYNET_DETAIL_NO_GPU

}  // namespace gpu
}  // namespace dynet
