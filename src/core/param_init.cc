#include "dynet/param-init.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "dynet/globals.h"
#include "dynet/saxe-init.h"

namespace dynet {

namespace {
void fill_uniform(Tensor& t, float left, float right) {
  std::uniform_real_distribution<float> dist(left, right);
  auto& e = random_engine();
  for (size_t i = 0; i < t.d.size(); ++i) t.v[i] = dist(e);
}
}  // namespace

void ParameterInitNormal::initialize_params(Tensor& values) const {
  if (var < 0) throw std::invalid_argument("ParameterInitNormal: variance must be >= 0, got " + std::to_string(var));
  std::normal_distribution<float> dist(mean, std::sqrt(var));
  auto& e = random_engine();
  for (size_t i = 0; i < values.d.size(); ++i) values.v[i] = dist(e);
}

ParameterInitUniform::ParameterInitUniform(float scale) : left(-scale), right(scale) {
  if (scale == 0.f) throw std::invalid_argument("ParameterInitUniform: scale must be non-zero");
}
ParameterInitUniform::ParameterInitUniform(float l, float r) : left(l), right(r) {
  if (l == r) throw std::invalid_argument("ParameterInitUniform: empty interval [" + std::to_string(l) + ", " +
                                          std::to_string(r) + "]");
}
void ParameterInitUniform::initialize_params(Tensor& values) const { fill_uniform(values, left, right); }

void ParameterInitConst::initialize_params(Tensor& values) const {
  for (size_t i = 0; i < values.d.size(); ++i) values.v[i] = cnst;
}

void ParameterInitIdentity::initialize_params(Tensor& values) const {
  if (values.d.nd != 2 || values.d[0] != values.d[1])
    throw std::invalid_argument("ParameterInitIdentity: needs a square matrix, got " + values.d.str());
  const size_t n = values.d[0];
  for (size_t i = 0; i < n * n; ++i) values.v[i] = (i % (n + 1) == 0) ? 1.f : 0.f;
}

void ParameterInitSaxe::initialize_params(Tensor& values) const {
  if (values.d.nd != 2 || values.d[0] != values.d[1])
    throw std::invalid_argument("ParameterInitSaxe: needs a square matrix, got " + values.d.str());
  TensorTools::randomize_orthonormal(values, gain);
}

void orthonormal_random(unsigned dim, float g, Tensor& x) {
  if (x.d.nd != 2 || x.d[0] != dim || x.d[1] != dim)
    throw std::invalid_argument("orthonormal_random: needs a " + std::to_string(dim) + "x" + std::to_string(dim) +
                                " matrix, got " + x.d.str());
  TensorTools::randomize_orthonormal(x, g);
}

void ParameterInitGlorot::initialize_params(Tensor& values) const {
  const Dim& d = values.d;
  const unsigned nd = lookup ? d.nd - 1 : d.nd;
  float scale;
  if (nd == 4) {
    // conv filter {kh, kw, in, out}
    scale = gain * std::sqrt(6.f / float((double(d[2]) + d[3]) * d[0] * d[1]));
  } else {
    float dims = 0;
    for (size_t i = 0; i < nd; ++i) dims += d[i];
    scale = gain * std::sqrt(3.f * nd) / std::sqrt(dims);
  }
  fill_uniform(values, -scale, scale);
}

void ParameterInitFromVector::initialize_params(Tensor& values) const {
  if (vec.size() != values.d.size())
    throw std::invalid_argument("ParameterInitFromVector: " + std::to_string(vec.size()) + " values for " +
                                values.d.str());
  std::copy(vec.begin(), vec.end(), values.v);
}

void ParameterInitFromFile::initialize_params(Tensor& values) const {
  std::ifstream in(filename);
  if (!in) throw std::runtime_error("ParameterInitFromFile: cannot open " + filename);
  unsigned i = 0;
  float x;
  while (i < values.d.size() && in >> x) values.v[i++] = x;
  if (i != values.d.size())
    throw std::runtime_error("ParameterInitFromFile: " + filename + " has " + std::to_string(i) + " values, " +
                             values.d.str() + " needs " + std::to_string(values.d.size()));
}

}  // namespace dynet
