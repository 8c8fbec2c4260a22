// Saxe et al.'s orthogonal initialisation (DyNet's dynet/saxe-init.h); ParameterInitSaxe
// (dynet/param-init.h) is the usual way to it.
#pragma once

namespace dynet {

struct Tensor;

// x (a dim x dim matrix) ← g · a random orthogonal matrix; throws std::invalid_argument when x is
// not dim x dim.
void orthonormal_random(unsigned dim, float g, Tensor& x);

}  // namespace dynet
