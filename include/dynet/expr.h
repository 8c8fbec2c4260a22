// Expressions: the DyNet-compatible way to add nodes to a ComputationGraph. The declarations are
// generated from the API entries next to each op's definition (src/ops/api.h); the comment after each
// is its op's math from the registry (docs/ops.md has the full table).
// Shapes are column-major; `bd` is the batch count. Elementwise binary ops broadcast size-1 dims
// and an unbatched side against a batched one.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "dynet/dynet.h"

namespace dynet {

// A fixed underlying type makes every int a valid GradientMode, so a bad one (a cast from an integer, e.g.
// from Python) is a value the ops can reject by name rather than undefined behaviour.
enum GradientMode : int { zero_gradient, straight_through_gradient };

// ---- BEGIN GENERATED from the API entries next to each definition (src/ops/api.h); do not edit by hand
// ---- src/ops/input.cc ----
Expression input(ComputationGraph& g, float s, Device* device = nullptr);  // y = the given values (column-major, batch elements last)
Expression input(ComputationGraph& g, const float* ps, Device* device = nullptr);  // y = *pdata (or *ps), read at every forward
Expression input(ComputationGraph& g, const Dim& d, const std::vector<float>& data, Device* device = nullptr);  // y = the given values (column-major, batch elements last)
Expression input(ComputationGraph& g, const Dim& d, const std::vector<float>* pdata, Device* device = nullptr);  // y = *pdata (or *ps), read at every forward
Expression input(ComputationGraph& g, const Dim& d, const std::vector<unsigned>& ids, const std::vector<float>& data, float defdata = 0.f, Device* device = nullptr);  // y[ids[k]] = data[k], y = defdata elsewhere
Expression parameter(ComputationGraph& g, Parameter p);  // y = p · s (s: the weight-decay scale, 1 without decay; dE/dy accumulates into p's gradient)
Expression const_parameter(ComputationGraph& g, Parameter p);  // y = p · s (s: the weight-decay scale; no gradient to p)
Expression parameter(ComputationGraph& g, LookupParameter lp);  // y = p · s (s: the weight-decay scale, 1 without decay; dE/dy accumulates into p's gradient)
Expression const_parameter(ComputationGraph& g, LookupParameter lp);  // y = p · s (s: the weight-decay scale; no gradient to p)
Expression lookup(ComputationGraph& g, LookupParameter p, unsigned index);  // y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)
Expression lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex);  // y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices);  // y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices);  // y[b] = E[ids[b]] · s (one row per batch element; s: the weight-decay scale)
Expression const_lookup(ComputationGraph& g, LookupParameter p, unsigned index);  // y[b] = E[ids[b]] · s (no gradient to E)
Expression const_lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex);  // y[b] = E[ids[b]] · s (no gradient to E)
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices);  // y[b] = E[ids[b]] · s (no gradient to E)
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices);  // y[b] = E[ids[b]] · s (no gradient to E)
Expression constant(ComputationGraph& g, const Dim& d, float val, Device* device = nullptr);  // y = c everywhere (zeros, ones, constant)
Expression one_hot(ComputationGraph& g, unsigned d, unsigned idx, Device* device = nullptr);  // y[b] = e_{ids[b]} ∈ R^d (1 at ids[b], 0 elsewhere)
Expression one_hot(ComputationGraph& g, unsigned d, const std::vector<unsigned>& ids, Device* device = nullptr);  // y[b] = e_{ids[b]} ∈ R^d (1 at ids[b], 0 elsewhere)
Expression zeros(ComputationGraph& g, const Dim& d, Device* device = nullptr);  // y = c everywhere (zeros, ones, constant)
Expression zeroes(ComputationGraph& g, const Dim& d, Device* device = nullptr);  // y = c everywhere (zeros, ones, constant)
Expression ones(ComputationGraph& g, const Dim& d, Device* device = nullptr);  // y = c everywhere (zeros, ones, constant)
Expression random_normal(ComputationGraph& g, const Dim& d, float mean = 0.f, float stddev = 1.f, Device* device = nullptr);  // y ~ N(mean, stddev²) per value
Expression random_bernoulli(ComputationGraph& g, const Dim& d, float p, float scale = 1.0f, Device* device = nullptr);  // y = scale with probability p, else 0, per value
Expression random_uniform(ComputationGraph& g, const Dim& d, float left, float right, Device* device = nullptr);  // y ~ U(left, right) per value
Expression random_gumbel(ComputationGraph& g, const Dim& d, float mu = 0.0f, float beta = 1.0f, Device* device = nullptr);  // y = μ - β log(-log u), u ~ U(0, 1) per value

// ---- src/ops/arith.cc ----
Expression operator+(const Expression& x, const Expression& y);  // y = x₁ + x₂ (broadcasting)
Expression operator-(const Expression& x, const Expression& y);  // y = x₁ - x₂ (broadcasting)
Expression cmult(const Expression& x, const Expression& y);  // y = x₁ ⊙ x₂ (broadcasting)
Expression cdiv(const Expression& x, const Expression& y);  // y = x₁ / x₂ (broadcasting)
Expression operator/(const Expression& x, const Expression& y);  // y = x₁ / x₂ (broadcasting)
Expression pow(const Expression& x, const Expression& y);  // y = x₁ ^ x₂ (broadcasting)
Expression min(const Expression& x, const Expression& y);  // y = min(x₁, x₂) (broadcasting)
Expression max(const Expression& x, const Expression& y);  // y = max(x₁, x₂) (broadcasting)
Expression operator+(const Expression& x, float y);  // y = x + c
Expression operator+(float x, const Expression& y);  // y = x + c
Expression operator-(const Expression& x, float y);  // y = x + c
Expression operator-(float x, const Expression& y);  // y = c - x
Expression operator*(const Expression& x, float y);  // y = c x
Expression operator*(float y, const Expression& x);  // y = c x
Expression operator/(const Expression& x, float y);  // y = c x
Expression colwise_add(const Expression& x, const Expression& bias);  // y[:, j] = x[:, j] + b
Expression sum(const std::initializer_list<Expression>& xs);  // y = Σᵢ xᵢ
Expression sum(const std::vector<Expression>& xs);  // y = Σᵢ xᵢ
Expression average(const std::initializer_list<Expression>& xs);  // y = (1/n) Σᵢ xᵢ
Expression average(const std::vector<Expression>& xs);  // y = (1/n) Σᵢ xᵢ
Expression dot_product(const Expression& x, const Expression& y);  // y = Σ x₁ ⊙ x₂ (per batch element)
Expression squared_norm(const Expression& x);  // y = Σ x² (per batch element)
Expression squared_distance(const Expression& x, const Expression& y);  // y = Σ (x₁ - x₂)² (per batch element)

// ---- src/ops/unary.cc ----
Expression tanh(const Expression& x);  // y = tanh(x)
Expression logistic(const Expression& x);  // y = 1 / (1 + e^-x)
Expression rectify(const Expression& x);  // y = max(x, 0)
Expression exp(const Expression& x);  // y = e^x
Expression log(const Expression& x);  // y = ln(x)
Expression sqrt(const Expression& x);  // y = √x
Expression square(const Expression& x);  // y = x²
Expression cube(const Expression& x);  // y = x³
Expression abs(const Expression& x);  // y = abs(x)
Expression erf(const Expression& x);  // y = erf(x) = 2/√π ∫₀ˣ e^(-t²) dt
Expression sin(const Expression& x);  // y = sin(x)
Expression cos(const Expression& x);  // y = cos(x)
Expression tan(const Expression& x);  // y = tan(x)
Expression asin(const Expression& x);  // y = arcsin(x)
Expression acos(const Expression& x);  // y = arccos(x)
Expression atan(const Expression& x);  // y = arctan(x)
Expression sinh(const Expression& x);  // y = sinh(x)
Expression cosh(const Expression& x);  // y = cosh(x)
Expression asinh(const Expression& x);  // y = arsinh(x)
Expression acosh(const Expression& x);  // y = arcosh(x), x ≥ 1
Expression atanh(const Expression& x);  // y = artanh(x), -1 < x < 1
Expression log_sigmoid(const Expression& x);  // y = ln σ(x) = -ln(1 + e^-x)
Expression lgamma(const Expression& x);  // y = ln Γ(x)
Expression softsign(const Expression& x);  // y = x / (1 + abs(x))
Expression selu(const Expression& x);  // y = λ (x > 0 ? x : α (e^x - 1)), λ = 1.0507, α = 1.6733
Expression elu(const Expression& x, float alpha = 1.f);  // y = x > 0 ? x : α (e^x - 1)
Expression silu(const Expression& x, float beta = 1.f);  // y = x σ(βx)
Expression operator-(const Expression& x);  // y = -x

// ---- src/ops/math.cc ----
Expression max(const std::initializer_list<Expression>& xs);  // y = max(x₁, …, xₙ) elementwise; gradient to the argmax (last on ties)
Expression max(const std::vector<Expression>& xs);  // y = max(x₁, …, xₙ) elementwise; gradient to the argmax (last on ties)
Expression circ_conv(const Expression& u, const Expression& v);  // y[k] = Σᵢ u[i] v[(k - i) mod n]
Expression circ_corr(const Expression& u, const Expression& v);  // y[k] = Σᵢ u[i] v[(i + k) mod n]
Expression round(const Expression& x, GradientMode gradient_mode = zero_gradient);  // y = round(x) (halves away from 0); ∂y/∂x = 0, or 1 straight-through
Expression ceil(const Expression& x, GradientMode gradient_mode = zero_gradient);  // y = ⌈x⌉; ∂y/∂x = 0, or 1 straight-through
Expression floor(const Expression& x, GradientMode gradient_mode = zero_gradient);  // y = ⌊x⌋; ∂y/∂x = 0, or 1 straight-through
Expression argmax(const Expression& x, GradientMode gradient_mode);  // y = one_hot(argmaxᵢ x[i, j]) per column j; ∂y/∂x = 0, or 1 straight-through
Expression flip_gradient(const Expression& x);  // y = x; dE/dx = λ · dE/dy

// ---- src/ops/matmul.cc ----
Expression operator*(const Expression& x, const Expression& y);  // y = x₁ x₂ (matrix product)
Expression affine_transform(const std::initializer_list<Expression>& xs);  // y = b + Σᵢ Wᵢ xᵢ (b {m} is added to every column)
Expression affine_transform(const std::vector<Expression>& xs);  // y = b + Σᵢ Wᵢ xᵢ (b {m} is added to every column)

// ---- src/ops/softmax.cc ----
Expression softmax(const Expression& x, unsigned d = 0);  // y = exp(x) / Σ exp(x) along dim d
Expression log_softmax(const Expression& x);  // y = x - log Σ exp(x) (each column)
Expression logsumexp(const std::initializer_list<Expression>& xs);  // y = log Σᵢ exp(xᵢ) (elementwise over the list)
Expression logsumexp(const std::vector<Expression>& xs);  // y = log Σᵢ exp(xᵢ) (elementwise over the list)
Expression log_softmax(const Expression& x, const std::vector<unsigned>& restriction);  // y_r = x_r - log Σ_{j∈R} exp(x_j) for r ∈ R, y_r = -inf otherwise (each column)
Expression sparsemax(const Expression& x);  // y = max(x - τ, 0) with τ such that Σ y = 1 (each column)
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>& target_support);  // y = ½ Σ_{j: x_j>τ} (x_j² - τ²) + ½ ‖q‖² - qᵀx, q uniform over the target rows (per batch element)
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>* ptarget_support);  // y = ½ Σ_{j: x_j>τ} (x_j² - τ²) + ½ ‖q‖² - qᵀx, q uniform over the target rows (per batch element)
Expression constrained_softmax(const Expression& x, const Expression& y);  // y = argmin_{p ∈ simplex, p ≤ u} KL(p ‖ softmax(x)), i.e. y_k = min(u_k, c exp(x_k)) with c such that Σ y = 1
Expression pickneglogsoftmax(const Expression& x, unsigned v);  // y = log Σ exp(x) - x[v] (per batch element, v one index or one per element)
Expression pickneglogsoftmax(const Expression& x, const unsigned* pv);  // y = log Σ exp(x) - x[v] (per batch element, v one index or one per element)
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>& v);  // y = log Σ exp(x) - x[v] (per batch element, v one index or one per element)
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>* pv);  // y = log Σ exp(x) - x[v] (per batch element, v one index or one per element)

// ---- src/ops/losses.cc ----
Expression hinge(const Expression& x, unsigned index, float m = 1.0f);  // y = Σ_{i≠c} max(0, m - x[c] + x[i]), c the correct index (per batch element)
Expression hinge(const Expression& x, const unsigned* pindex, float m = 1.0f);  // y = Σ_{i≠c} max(0, m - x[c] + x[i]), c the correct index (per batch element)
Expression hinge(const Expression& x, const std::vector<unsigned>& indices, float m = 1.0f);  // y = Σ_{i≠c} max(0, m - x[c] + x[i]), c the correct index (per batch element)
Expression hinge(const Expression& x, const std::vector<unsigned>* pindices, float m = 1.0f);  // y = Σ_{i≠c} max(0, m - x[c] + x[i]), c the correct index (per batch element)
Expression hinge_dim(const Expression& x, const std::vector<unsigned>& indices, unsigned d = 0, float m = 1.0f);  // y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) along dim d (d = 0 shown; per batch element)
Expression hinge_dim(const Expression& x, const std::vector<unsigned>* pindices, unsigned d = 0, float m = 1.0f);  // y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) along dim d (d = 0 shown; per batch element)
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>& indices, unsigned d = 0, float m = 1.0f);  // y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) along dim d (d = 0 shown; per batch element)
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>* pindices, unsigned d = 0, float m = 1.0f);  // y[j] = Σ_{i≠c_j} max(0, m - x[c_j, j] + x[i, j]) along dim d (d = 0 shown; per batch element)
Expression l2_norm(const Expression& x);  // y = sqrt(Σ x²) (per batch element)
Expression l1_distance(const Expression& x, const Expression& y);  // y = Σ abs(x₁ - x₂) (per batch element)
Expression huber_distance(const Expression& x, const Expression& y, float c = 1.345f);  // y = Σ h(x₁ - x₂), h(a) = a²/2 if abs(a) < c else c (abs(a) - c/2) (per batch element)
Expression binary_log_loss(const Expression& x, const Expression& y);  // y = -Σ [x₂ ln x₁ + (1 - x₂) ln(1 - x₁)] (per batch element; ln clamped at ln FLT_MIN)
Expression pairwise_rank_loss(const Expression& x, const Expression& y, float m = 1.0f);  // y = max(0, m - x₁ + x₂) (elementwise)
Expression poisson_loss(const Expression& x, unsigned y);  // y = e^x - t x + ln t! (t the target count)
Expression poisson_loss(const Expression& x, const unsigned* py);  // y = e^x - t x + ln t! (t the target count)

// ---- src/ops/select.cc ----
Expression pick(const Expression& x, unsigned v, unsigned d = 0);  // y = x[v] along dim d (removed); vector forms: y[b] = x[b][v[b]]
Expression pick(const Expression& x, const unsigned* pv, unsigned d = 0);  // y = x[v] along dim d (removed); vector forms: y[b] = x[b][v[b]]
Expression pick(const Expression& x, const std::vector<unsigned>& v, unsigned d = 0);  // y = x[v] along dim d (removed); vector forms: y[b] = x[b][v[b]]
Expression pick(const Expression& x, const std::vector<unsigned>* pv, unsigned d = 0);  // y = x[v] along dim d (removed); vector forms: y[b] = x[b][v[b]]
Expression pick_range(const Expression& x, unsigned s, unsigned e, unsigned d = 0);  // y = x[s:e) along dim d
Expression pickrange(const Expression& x, unsigned s, unsigned e);  // y = x[s:e) along dim d
Expression concatenate(const std::initializer_list<Expression>& xs, unsigned d = 0);  // y = [xs[0]; xs[1]; ...] along dim d (unbatched arguments broadcast)
Expression concatenate(const std::vector<Expression>& xs, unsigned d = 0);  // y = [xs[0]; xs[1]; ...] along dim d (unbatched arguments broadcast)
Expression concatenate_cols(const std::initializer_list<Expression>& xs);  // y = [xs[0]; xs[1]; ...] along dim d (unbatched arguments broadcast)
Expression concatenate_cols(const std::vector<Expression>& xs);  // y = [xs[0]; xs[1]; ...] along dim d (unbatched arguments broadcast)
Expression reshape(const Expression& x, const Dim& d);  // y = x viewed with dim d (same values, column-major; no copy)
Expression transpose(const Expression& x, const std::vector<unsigned>& dims = {1, 0});  // y[i_{dims[0]}, i_{dims[1]}, ...] = x[i_0, i_1, ...] (output dim j = input dim dims[j])
Expression select_rows(const Expression& x, const std::vector<unsigned>& rows);  // y[k, ...] = x[rows[k], ...]
Expression select_rows(const Expression& x, const std::vector<unsigned>* prows);  // y[k, ...] = x[rows[k], ...]
Expression select_cols(const Expression& x, const std::vector<unsigned>& cols);  // y[:, k, ...] = x[:, cols[k], ...]
Expression select_cols(const Expression& x, const std::vector<unsigned>* pcols);  // y[:, k, ...] = x[:, cols[k], ...]
Expression pick_batch_elem(const Expression& x, unsigned v);  // y[b] = x[v[b]] (batch elements; pick_batch_elem gives one)
Expression pick_batch_elem(const Expression& x, const unsigned* pv);  // y[b] = x[v[b]] (batch elements; pick_batch_elem gives one)
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>& v);  // y[b] = x[v[b]] (batch elements; pick_batch_elem gives one)
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>* pv);  // y[b] = x[v[b]] (batch elements; pick_batch_elem gives one)
Expression concatenate_to_batch(const std::initializer_list<Expression>& xs);  // y = [xs[0][0..B0), xs[1][0..B1), ...] along the batch
Expression concatenate_to_batch(const std::vector<Expression>& xs);  // y = [xs[0][0..B0), xs[1][0..B1), ...] along the batch
Expression strided_select(const Expression& x, const std::vector<int>& strides, const std::vector<int>& from = {}, const std::vector<int>& to = {});  // y = x[from_k : to_k : strides_k] on each dim k, then the batch

// ---- src/ops/reduce.cc ----
Expression sum_elems(const Expression& x);  // y_b = Σ_i x_b[i] (per batch element)
Expression mean_elems(const Expression& x);  // y_b = (1/N) Σ_i x_b[i], N = values per batch element
Expression moment_elems(const Expression& x, unsigned r);  // y_b = (1/N) Σ_i x_b[i]^r, N = values per batch element
Expression std_elems(const Expression& x);  // y_b = sqrt((1/N) Σ_i (x_b[i] - μ_b)²), μ_b = mean_elems(x)_b
Expression sum_batches(const Expression& x);  // y = Σ_b x[b] (result has one batch element)
Expression moment_batches(const Expression& x, unsigned r);  // y = (1/B) Σ_b x[b]^r (elementwise over the B batch elements)
Expression mean_batches(const Expression& x);  // y = (1/B) Σ_b x[b]
Expression std_batches(const Expression& x);  // y = sqrt((1/B) Σ_b (x[b] - μ)²), μ = mean_batches(x)
Expression sum_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false);  // y = Σ x over the given dims (and the batch when b); those dims are removed
Expression sum_rows(const Expression& x);  // y = Σ x over the given dims (and the batch when b); those dims are removed
Expression sum_cols(const Expression& x);  // y = Σ x over the given dims (and the batch when b); those dims are removed
Expression moment_dim(const Expression& x, const std::vector<unsigned>& dims, unsigned r, bool b = false, unsigned n = 0);  // y = (1/n) Σ x^r over the given dims (and the batch when b); n = count unless given
Expression mean_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false, unsigned n = 0);  // y = (1/n) Σ x over the given dims (and the batch when b); n = count unless given
Expression std_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false, unsigned n = 0);  // y = sqrt((1/n) Σ (x - μ)²), μ = (1/n) Σ x, over the given dims (and the batch when b)
Expression average_cols(const Expression& x);  // y[i] = (1/C) Σ_j x[i, j] for an R x C matrix x
Expression max_dim(const Expression& x, unsigned d = 0);  // y = max_k x[.., k, ..] along dim d (removed); gradient to the first argmax
Expression min_dim(const Expression& x, unsigned d = 0);  // y = min_k x[.., k, ..] along dim d (removed); gradient to the first argmin
Expression logsumexp_dim(const Expression& x, unsigned d);  // y = log Σ_k exp(x[.., k, ..]) along dim d (removed)
Expression cumsum(const Expression& x, unsigned d);  // y[.., k, ..] = Σ_{j ≤ k} x[.., j, ..] along dim d
Expression kmax_pooling(const Expression& x, unsigned k, unsigned d = 1);  // y = the k largest x along dim d, in their original order
Expression fold_rows(const Expression& x, unsigned nrows = 2);  // y[i, j] = Σ_{t<nrows} x[i·nrows + t, j]

// ---- src/ops/flow.cc ----
Expression dropout(const Expression& x, float p);  // y = x ⊙ m / (1-p), m ~ Bernoulli(1-p) per value
Expression dropout_dim(const Expression& x, unsigned d, float p);  // y = x ⊙ m / (1-p), m ~ Bernoulli(1-p) shared along dim d
Expression dropout_batch(const Expression& x, float p);  // y[b] = x[b] · m_b / (1-p), m_b ~ Bernoulli(1-p) per batch element
Expression block_dropout(const Expression& x, float p);  // y = x · m / (1-p), one m ~ Bernoulli(1-p) for the whole tensor
Expression noise(const Expression& x, float stddev);  // y = x + ε, ε ~ N(0, stddev²) per value
Expression nobackprop(const Expression& x);  // y = x; dE/dx = 0
Expression scale_gradient(const Expression& x, float lambd = 1.0f);  // y = x; dE/dx = λ · dE/dy
Expression to_device(const Expression& x, Device* device);  // y = x, on another device; dE/dx = dE/dy

// ---- src/ops/conv.cc ----
Expression filter1d_narrow(const Expression& x, const Expression& f);  // y[i,j] = Σ_{r,c} x[r,j+c] · f[r,c,i]
Expression conv1d_narrow(const Expression& x, const Expression& f);  // y[r,o] = Σ_{c<k} x[r,o+c] · f[r,c]
Expression conv1d_wide(const Expression& x, const Expression& f);  // y[r,o] = Σ_{c<k, 0≤o-c<n} x[r,o-c] · f[r,c]
Expression kmh_ngram(const Expression& x, unsigned n);  // y[:,j] = Σ_{k<n} x[:,j+k]
Expression conv2d(const Expression& x, const Expression& f, const std::vector<unsigned>& stride, bool is_valid = true);  // y[i,j,o] = b[o] + Σ_{p,q,c} x[i·sh+p-pad_h, j·sw+q-pad_w, c] · f[p,q,c,o]
Expression conv2d(const Expression& x, const Expression& f, const Expression& b, const std::vector<unsigned>& stride, bool is_valid = true);  // y[i,j,o] = b[o] + Σ_{p,q,c} x[i·sh+p-pad_h, j·sw+q-pad_w, c] · f[p,q,c,o]
Expression maxpooling2d(const Expression& x, const std::vector<unsigned>& ksize, const std::vector<unsigned>& stride, bool is_valid = true);  // y[i,j,c] = max over the window at (i·sh-pad_h, j·sw-pad_w) of x[·,·,c]

// ---- src/ops/contract.cc ----
Expression contract3d_1d(const Expression& x, const Expression& y);  // z[i,j] = b[i,j] + Σ_k x[i,j,k] · y[k]
Expression contract3d_1d(const Expression& x, const Expression& y, const Expression& b);  // z[i,j] = b[i,j] + Σ_k x[i,j,k] · y[k]
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z);  // t[i] = b[i] + Σ_{j,k} x[i,j,k] · y[k] · z[j]
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z, const Expression& b);  // t[i] = b[i] + Σ_{j,k} x[i,j,k] · y[k] · z[j]

// ---- src/ops/linalg.cc ----
Expression inverse(const Expression& x);  // y = x⁻¹
Expression logdet(const Expression& x);  // y = log abs(det x)
Expression trace_of_product(const Expression& x, const Expression& y);  // y = tr(x · yᵀ) = Σ x ⊙ y

// ---- src/ops/norm.cc ----
Expression layer_norm(const Expression& x, const Expression& g, const Expression& b);  // y = g ⊙ (x - μ) / (σ + 1e-8) + b, μ and σ (1/n) over the elements
Expression weight_norm(const Expression& w, const Expression& g);  // y = g · w / ‖w‖

// ---- src/ops/lstm_nodes.cc ----
Expression vanilla_lstm_gates(const Expression& x_t, const Expression& h_tm1, const Expression& Wx, const Expression& Wh, const Expression& b, float weightnoise_std = 0.f);  // [σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)], a = Wx·(x⊙m_x) + Wh·(h⊙m_h) + b
Expression vanilla_lstm_gates_concat(const std::vector<Expression>& x_t, const Expression& h_tm1, const Expression& Wx, const Expression& Wh, const Expression& b, float weightnoise_std = 0.f);  // [σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)], a = Wx·(x⊙m_x) + Wh·(h⊙m_h) + b
Expression vanilla_lstm_gates_dropout(const Expression& x_t, const Expression& h_tm1, const Expression& Wx, const Expression& Wh, const Expression& b, const Expression& dropout_mask_x, const Expression& dropout_mask_h, float weightnoise_std = 0.f);  // [σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)], a = Wx·(x⊙m_x) + Wh·(h⊙m_h) + b
Expression vanilla_lstm_gates_dropout_concat(const std::vector<Expression>& x_t, const Expression& h_tm1, const Expression& Wx, const Expression& Wh, const Expression& b, const Expression& dropout_mask_x, const Expression& dropout_mask_h, float weightnoise_std = 0.f);  // [σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)], a = Wx·(x⊙m_x) + Wh·(h⊙m_h) + b
Expression vanilla_lstm_c(const Expression& c_tm1, const Expression& gates_t);  // c = i ⊙ g + f ⊙ c_tm1 (i, f, g: blocks of gates)
Expression vanilla_lstm_h(const Expression& c_t, const Expression& gates_t);  // h = o ⊙ tanh(c_t) (o: block of gates)
// ---- END GENERATED

}  // namespace dynet
