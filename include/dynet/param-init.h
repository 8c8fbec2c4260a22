// Parameter initialisers (DyNet's names and formulas).
#pragma once

#include <string>
#include <vector>

#include "dynet/tensor.h"

namespace dynet {

struct ParameterInit {
  virtual ~ParameterInit() = default;
  virtual void initialize_params(Tensor& values) const = 0;
};

// N(mean, sqrt(var)): var is a variance.
struct ParameterInitNormal : ParameterInit {
  explicit ParameterInitNormal(float m = 0.f, float v = 1.f) : mean(m), var(v) {}
  void initialize_params(Tensor& values) const override;
  float mean, var;
};

// U(-scale, scale) or U(l, r).
struct ParameterInitUniform : ParameterInit {
  explicit ParameterInitUniform(float scale);
  ParameterInitUniform(float l, float r);
  void initialize_params(Tensor& values) const override;
  float left, right;
};

// Every value = c.
struct ParameterInitConst : ParameterInit {
  explicit ParameterInitConst(float c) : cnst(c) {}
  void initialize_params(Tensor& values) const override;
  float cnst;
};

// The identity matrix (square 2-d parameters only).
struct ParameterInitIdentity : ParameterInit {
  void initialize_params(Tensor& values) const override;
};

// U(±gain·sqrt(3·k / sum(dims))) with k = #dims (lookup: the last dim excluded); 4-d conv filters:
// ±gain·sqrt(6 / ((in+out)·kh·kw)).
struct ParameterInitGlorot : ParameterInit {
  explicit ParameterInitGlorot(bool is_lookup = false, float gain = 1.f) : lookup(is_lookup), gain(gain) {}
  void initialize_params(Tensor& values) const override;
  bool lookup;
  float gain;
};

// A random orthogonal matrix times gain (Saxe et al. 2014); square 2-d parameters only.
struct ParameterInitSaxe : ParameterInit {
  explicit ParameterInitSaxe(float gain = 1.f) : gain(gain) {}
  void initialize_params(Tensor& values) const override;
  float gain;
};

// The values of a vector, column-major.
struct ParameterInitFromVector : ParameterInit {
  explicit ParameterInitFromVector(std::vector<float> v) : vec(std::move(v)) {}
  void initialize_params(Tensor& values) const override;
  std::vector<float> vec;
};

// Whitespace-separated values read from a file, column-major.
struct ParameterInitFromFile : ParameterInit {
  explicit ParameterInitFromFile(std::string f) : filename(std::move(f)) {}
  void initialize_params(Tensor& values) const override;
  std::string filename;
};

}  // namespace dynet
