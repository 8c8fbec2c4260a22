// Expressions: the DyNet-compatible way to add nodes to a ComputationGraph.
// Shapes are column-major; `bd` is the batch count. Elementwise binary ops broadcast size-1 dims
// and an unbatched side against a batched one.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "dynet/dynet.h"

namespace dynet {

enum GradientMode { zero_gradient, straight_through_gradient };

// ---- inputs ----
Expression input(ComputationGraph& g, real s, Device* device = nullptr);
Expression input(ComputationGraph& g, const real* ps, Device* device = nullptr);  // read at forward time
Expression input(ComputationGraph& g, const Dim& d, const std::vector<float>& data, Device* device = nullptr);
Expression input(ComputationGraph& g, const Dim& d, const std::vector<float>* pdata, Device* device = nullptr);
// sparse: data[k] at position ids[k], defdata elsewhere
Expression input(ComputationGraph& g, const Dim& d, const std::vector<unsigned>& ids, const std::vector<float>& data,
                 float defdata = 0.f, Device* device = nullptr);
Expression parameter(ComputationGraph& g, Parameter p);
Expression parameter(ComputationGraph& g, LookupParameter lp);  // the whole table {d..., n}
Expression const_parameter(ComputationGraph& g, Parameter p);
Expression const_parameter(ComputationGraph& g, LookupParameter lp);
Expression lookup(ComputationGraph& g, LookupParameter p, unsigned index);
Expression lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex);
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices);  // batch of rows
Expression lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices);
Expression const_lookup(ComputationGraph& g, LookupParameter p, unsigned index);
Expression const_lookup(ComputationGraph& g, LookupParameter p, const unsigned* pindex);
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>& indices);
Expression const_lookup(ComputationGraph& g, LookupParameter p, const std::vector<unsigned>* pindices);
// e_idx ∈ R^d: 1 at idx, 0 elsewhere; the vector form gives one per batch element ({d} x |ids|)
Expression one_hot(ComputationGraph& g, unsigned d, unsigned idx, Device* device = nullptr);
Expression one_hot(ComputationGraph& g, unsigned d, const std::vector<unsigned>& ids, Device* device = nullptr);
Expression zeros(ComputationGraph& g, const Dim& d, Device* device = nullptr);
Expression zeroes(ComputationGraph& g, const Dim& d, Device* device = nullptr);
Expression ones(ComputationGraph& g, const Dim& d, Device* device = nullptr);
Expression constant(ComputationGraph& g, const Dim& d, float val, Device* device = nullptr);
Expression random_normal(ComputationGraph& g, const Dim& d, float mean = 0.f, float stddev = 1.f,
                         Device* device = nullptr);
// each value is `scale` with probability p, else 0
Expression random_bernoulli(ComputationGraph& g, const Dim& d, float p, float scale = 1.0f, Device* device = nullptr);
Expression random_uniform(ComputationGraph& g, const Dim& d, float left, float right, Device* device = nullptr);
Expression random_gumbel(ComputationGraph& g, const Dim& d, float mu = 0.0f, float beta = 1.0f,
                         Device* device = nullptr);

// ---- arithmetic ----
Expression operator-(const Expression& x);                          // -x
Expression operator+(const Expression& x, const Expression& y);     // x + y (broadcasting)
Expression operator+(const Expression& x, real y);                  // x + y
Expression operator+(real x, const Expression& y);                  // x + y
Expression operator-(const Expression& x, const Expression& y);     // x - y (broadcasting)
Expression operator-(real x, const Expression& y);                  // x - y
Expression operator-(const Expression& x, real y);                  // x - y
Expression operator*(const Expression& x, const Expression& y);     // matrix product x·y
Expression operator*(const Expression& x, float y);                 // x * y
inline Expression operator*(float y, const Expression& x) { return x * y; }
Expression operator/(const Expression& x, const Expression& y);     // elementwise x / y (broadcasting)
Expression operator/(const Expression& x, float y);                 // x / y
Expression cmult(const Expression& x, const Expression& y);         // elementwise x ⊙ y (broadcasting)
Expression cdiv(const Expression& x, const Expression& y);          // elementwise x / y (broadcasting)
Expression colwise_add(const Expression& x, const Expression& bias);  // x + bias for every column
Expression affine_transform(const std::initializer_list<Expression>& xs);  // xs[0] + Σ xs[2k+1]·xs[2k+2]
Expression affine_transform(const std::vector<Expression>& xs);
Expression sum(const std::initializer_list<Expression>& xs);        // Σ xs (same shapes; batch broadcasts)
Expression sum(const std::vector<Expression>& xs);
Expression average(const std::initializer_list<Expression>& xs);    // Σ xs / n
Expression average(const std::vector<Expression>& xs);
Expression pow(const Expression& x, const Expression& y);  // elementwise x^y (broadcasting; y may be {1})
Expression min(const Expression& x, const Expression& y);  // elementwise min (broadcasting); ties: gradient to y
Expression max(const Expression& x, const Expression& y);  // elementwise max (broadcasting); ties: gradient to y
Expression max(const std::initializer_list<Expression>& xs);  // elementwise max of the list; gradient to the argmax
Expression max(const std::vector<Expression>& xs);             // (ties: the last), same shapes, batch broadcasts
Expression circ_conv(const Expression& u, const Expression& v);  // y[k] = Σ_i u[i] v[(k - i) mod n]
Expression circ_corr(const Expression& u, const Expression& v);  // y[k] = Σ_i u[i] v[(i + k) mod n]

// ---- elementwise math ----
Expression tanh(const Expression& x);
Expression logistic(const Expression& x);  // 1 / (1 + e^-x)
Expression rectify(const Expression& x);   // max(x, 0)
Expression elu(const Expression& x, float alpha = 1.f);  // x > 0 ? x : alpha (e^x - 1)
Expression selu(const Expression& x);                     // 1.0507 · (x > 0 ? x : 1.6733 (e^x - 1))
Expression silu(const Expression& x, float beta = 1.f);   // x σ(βx)
Expression softsign(const Expression& x);                 // x / (1 + |x|)
Expression log_sigmoid(const Expression& x);              // ln σ(x) = -ln(1 + e^-x)
Expression exp(const Expression& x);
Expression log(const Expression& x);
Expression lgamma(const Expression& x);  // ln Γ(x)
Expression sqrt(const Expression& x);
Expression square(const Expression& x);
Expression cube(const Expression& x);
Expression abs(const Expression& x);
Expression erf(const Expression& x);
Expression sin(const Expression& x);
Expression cos(const Expression& x);
Expression tan(const Expression& x);
Expression asin(const Expression& x);
Expression acos(const Expression& x);
Expression atan(const Expression& x);
Expression sinh(const Expression& x);
Expression cosh(const Expression& x);
Expression asinh(const Expression& x);
Expression acosh(const Expression& x);  // x ≥ 1
Expression atanh(const Expression& x);  // |x| < 1
// Rounding: the gradient is zero, or with straight_through_gradient passed through unchanged.
Expression round(const Expression& x, GradientMode gradient_mode = zero_gradient);
Expression ceil(const Expression& x, GradientMode gradient_mode = zero_gradient);
Expression floor(const Expression& x, GradientMode gradient_mode = zero_gradient);

// ---- softmax and losses ----
Expression softmax(const Expression& x, unsigned d = 0);  // along dim d (0: each column)
Expression log_softmax(const Expression& x);              // each column
Expression logsumexp(const std::initializer_list<Expression>& xs);  // log Σ e^xs (elementwise over the list)
Expression logsumexp(const std::vector<Expression>& xs);
Expression pickneglogsoftmax(const Expression& x, unsigned v);      // -log softmax(x)[v]
Expression pickneglogsoftmax(const Expression& x, const unsigned* pv);
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>& v);  // one index per batch element
Expression pickneglogsoftmax(const Expression& x, const std::vector<unsigned>* pv);
Expression squared_norm(const Expression& x);                        // Σ x² per batch element
Expression squared_distance(const Expression& x, const Expression& y);  // Σ (x - y)² per batch element
Expression dot_product(const Expression& x, const Expression& y);       // Σ x ⊙ y per batch element
// log_softmax over the listed rows of each column; the other rows are -inf (log of probability 0)
Expression log_softmax(const Expression& x, const std::vector<unsigned>& restriction);
Expression sparsemax(const Expression& x);  // max(x - τ, 0), τ such that each column sums to 1
// ½ Σ_{x_j>τ} (x_j² - τ²) + ½ ‖q‖² - qᵀx, q uniform over target_support (x a column vector)
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>& target_support);
Expression sparsemax_loss(const Expression& x, const std::vector<unsigned>* ptarget_support);
// the distribution nearest softmax(x) (in KL) with each p_k ≤ y_k (needs y ≥ 0, Σ y ≥ 1)
Expression constrained_softmax(const Expression& x, const Expression& y);
// Σ_{i≠index} max(0, m - x[index] + x[i]) per batch element (m ≥ 0)
Expression hinge(const Expression& x, unsigned index, float m = 1.0f);
Expression hinge(const Expression& x, const unsigned* pindex, float m = 1.0f);
Expression hinge(const Expression& x, const std::vector<unsigned>& indices, float m = 1.0f);  // one per batch elem
Expression hinge(const Expression& x, const std::vector<unsigned>* pindices, float m = 1.0f);
// hinge along dim d of a matrix: one correct index per column (d = 0) or row (d = 1)
Expression hinge_dim(const Expression& x, const std::vector<unsigned>& indices, unsigned d = 0, float m = 1.0f);
Expression hinge_dim(const Expression& x, const std::vector<unsigned>* pindices, unsigned d = 0, float m = 1.0f);
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>& indices, unsigned d = 0,
                     float m = 1.0f);  // one index vector per batch element
Expression hinge_dim(const Expression& x, const std::vector<std::vector<unsigned>>* pindices, unsigned d = 0,
                     float m = 1.0f);
Expression l2_norm(const Expression& x);                          // sqrt(Σ x²) per batch element
Expression l1_distance(const Expression& x, const Expression& y);  // Σ |x - y| per batch element
// Σ h(x - y) per batch element, h(a) = |a| < c ? a² : c (2|a| - c) (DyNet's scale: twice the usual Huber)
Expression huber_distance(const Expression& x, const Expression& y, float c = 1.345f);
// -Σ [y ln x + (1 - y) ln(1 - x)] per batch element (x probabilities, y targets in [0, 1])
Expression binary_log_loss(const Expression& x, const Expression& y);
Expression pairwise_rank_loss(const Expression& x, const Expression& y, real m = 1.0f);  // max(0, m - x + y)
// -ln Poisson(y; λ = e^x) = e^x - y x + ln y! (x one value per batch element)
Expression poisson_loss(const Expression& x, unsigned y);
Expression poisson_loss(const Expression& x, const unsigned* py);

// ---- selection and shape ----
Expression pick(const Expression& x, unsigned v, unsigned d = 0);  // x[v] along dim d (dim removed)
Expression pick(const Expression& x, const unsigned* pv, unsigned d = 0);
Expression pick(const Expression& x, const std::vector<unsigned>& v, unsigned d = 0);  // one per batch element
Expression pick(const Expression& x, const std::vector<unsigned>* pv, unsigned d = 0);
Expression pick_range(const Expression& x, unsigned s, unsigned e, unsigned d = 0);  // x[s:e] along dim d
Expression pickrange(const Expression& x, unsigned s, unsigned e);  // deprecated name of pick_range(x, s, e, 0)
Expression pick_batch_elem(const Expression& x, unsigned v);         // batch element v (bd = 1)
Expression pick_batch_elem(const Expression& x, const unsigned* pv);
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>& v);  // batch elements v[0], v[1], ...
Expression pick_batch_elems(const Expression& x, const std::vector<unsigned>* pv);
Expression concatenate_to_batch(const std::initializer_list<Expression>& xs);  // batches of xs one after another
Expression concatenate_to_batch(const std::vector<Expression>& xs);
// x[from[k] : to[k] : strides[k]] on each dim k; entry x.nd (one past the last dim) addresses the batch.
// Missing entries mean stride 1, from 0, to the axis size.
Expression strided_select(const Expression& x, const std::vector<int>& strides, const std::vector<int>& from = {},
                          const std::vector<int>& to = {});
Expression concatenate(const std::initializer_list<Expression>& xs, unsigned d = 0);
Expression concatenate(const std::vector<Expression>& xs, unsigned d = 0);
Expression concatenate_cols(const std::initializer_list<Expression>& xs);
Expression concatenate_cols(const std::vector<Expression>& xs);
Expression reshape(const Expression& x, const Dim& d);  // same size; d.bd may change the batch count
Expression transpose(const Expression& x, const std::vector<unsigned>& dims = {1, 0});
Expression select_rows(const Expression& x, const std::vector<unsigned>& rows);
Expression select_rows(const Expression& x, const std::vector<unsigned>* prows);
Expression select_cols(const Expression& x, const std::vector<unsigned>& cols);
Expression select_cols(const Expression& x, const std::vector<unsigned>* pcols);

// ---- reductions ----
// Moments are raw: (1/n) Σ x^r. std is the population standard deviation sqrt((1/n) Σ (x - μ)²).
// In the *_dim forms b = true also reduces the batch, and n > 0 replaces the divisor (for masking).
Expression sum_elems(const Expression& x);                 // Σ all elements, per batch element
Expression mean_elems(const Expression& x);                // mean of all elements, per batch element
Expression moment_elems(const Expression& x, unsigned r);  // (1/N) Σ x^r, per batch element
Expression std_elems(const Expression& x);                 // standard deviation, per batch element
Expression sum_batches(const Expression& x);               // Σ over the batch
Expression moment_batches(const Expression& x, unsigned r);  // (1/B) Σ_b x[b]^r
Expression mean_batches(const Expression& x);              // (1/B) Σ_b x[b]
Expression std_batches(const Expression& x);               // standard deviation over the batch
Expression sum_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false);  // Σ over dims
Expression sum_rows(const Expression& x);  // Σ_i x[i, :] = sum_dim(x, {0}) (a row's worth of sums)
Expression sum_cols(const Expression& x);  // Σ_j x[:, j] = sum_dim(x, {1}) (a column's worth of sums)
Expression moment_dim(const Expression& x, const std::vector<unsigned>& dims, unsigned r, bool b = false,
                      unsigned n = 0);  // (1/n) Σ x^r over dims
Expression mean_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false, unsigned n = 0);
Expression std_dim(const Expression& x, const std::vector<unsigned>& dims, bool b = false, unsigned n = 0);
Expression average_cols(const Expression& x);              // mean of the columns of a matrix
Expression cumsum(const Expression& x, unsigned d);        // y[k] = Σ_{j≤k} x[j] along dim d
Expression max_dim(const Expression& x, unsigned d = 0);   // max along dim d (removed)
Expression min_dim(const Expression& x, unsigned d = 0);   // min along dim d (removed)
Expression logsumexp_dim(const Expression& x, unsigned d);  // log Σ exp(x) along dim d (removed)
Expression kmax_pooling(const Expression& x, unsigned k, unsigned d = 1);  // k largest along d, order kept
Expression fold_rows(const Expression& x, unsigned nrows = 2);  // Σ of each block of nrows rows

// ---- noise and gradient flow ----
Expression dropout(const Expression& x, real p);  // zero with probability p, keep scaled by 1/(1-p)
Expression dropout_dim(const Expression& x, unsigned d, real p);  // one draw per fiber along dim d (d = 0: columns)
Expression dropout_batch(const Expression& x, real p);  // one draw per batch element
Expression block_dropout(const Expression& x, real p);  // one draw for the whole tensor (p may be 1)
Expression noise(const Expression& x, real stddev);  // x + N(0, stddev)
Expression nobackprop(const Expression& x);          // x; no gradient flows back
Expression scale_gradient(const Expression& x, float lambd = 1.0f);  // x; gradient scaled by lambd
// x on `device`; this build has only the CPU, so it checks the device and returns x
Expression to_device(const Expression& x, Device* device);
Expression flip_gradient(const Expression& x);                       // x; gradient negated
// One-hot of the maximum of each column (first on ties); gradient zero or, straight-through, passed unchanged.
Expression argmax(const Expression& x, GradientMode gradient_mode);

// ---- convolution (images are column-major {H, W, C}, filters {KH, KW, C_in, C_out}) ----
Expression filter1d_narrow(const Expression& x, const Expression& f);  // y[i,j] = Σ_{r,c} x[r,j+c] f[r,c,i]
Expression kmh_ngram(const Expression& x, unsigned n);                 // y[:,j] = Σ_{k<n} x[:,j+k]
// 2-d cross-correlation; stride {rows, cols}; is_valid false: TensorFlow's 'SAME' padding
Expression conv2d(const Expression& x, const Expression& f, const std::vector<unsigned>& stride, bool is_valid = true);
Expression conv2d(const Expression& x, const Expression& f, const Expression& b, const std::vector<unsigned>& stride,
                  bool is_valid = true);  // + b[c_out]
Expression maxpooling2d(const Expression& x, const std::vector<unsigned>& ksize, const std::vector<unsigned>& stride,
                        bool is_valid = true);  // max over each ksize window

// ---- tensor (3-d) contractions ----
Expression contract3d_1d(const Expression& x, const Expression& y);  // z[i,j] = Σ_k x[i,j,k] y[k]
Expression contract3d_1d(const Expression& x, const Expression& y, const Expression& b);  // + b[i,j]
// t[i] = Σ_{j,k} x[i,j,k] y[k] z[j]
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z);
Expression contract3d_1d_1d(const Expression& x, const Expression& y, const Expression& z,
                            const Expression& b);  // + b[i]

// ---- linear algebra (per batch element) ----
Expression inverse(const Expression& x);                             // x⁻¹
Expression logdet(const Expression& x);                              // log |det x|
Expression trace_of_product(const Expression& x, const Expression& y);  // tr(x yᵀ)

// ---- normalization ----
Expression layer_norm(const Expression& x, const Expression& g, const Expression& b);  // g ⊙ (x - μ) / (σ + 1e-8) + b
Expression weight_norm(const Expression& w, const Expression& g);                      // g w / ‖w‖

// ---- fused LSTM nodes (gates stacked i, f, o, g; forget bias +1 inside) ----
// [σ(a_i); σ(a_f + 1); σ(a_o); tanh(a_g)] with a = Wx x_t + Wh h_tm1 + b (weights + N(0, weightnoise_std²))
Expression vanilla_lstm_gates(const Expression& x_t, const Expression& h_tm1, const Expression& Wx,
                              const Expression& Wh, const Expression& b, real weightnoise_std = 0.f);
Expression vanilla_lstm_gates_concat(const std::vector<Expression>& x_t, const Expression& h_tm1, const Expression& Wx,
                                     const Expression& Wh, const Expression& b, real weightnoise_std = 0.f);
// the same with x_t ⊙ dropout_mask_x and h_tm1 ⊙ dropout_mask_h
Expression vanilla_lstm_gates_dropout(const Expression& x_t, const Expression& h_tm1, const Expression& Wx,
                                      const Expression& Wh, const Expression& b, const Expression& dropout_mask_x,
                                      const Expression& dropout_mask_h, real weightnoise_std = 0.f);
Expression vanilla_lstm_gates_dropout_concat(const std::vector<Expression>& x_t, const Expression& h_tm1,
                                             const Expression& Wx, const Expression& Wh, const Expression& b,
                                             const Expression& dropout_mask_x, const Expression& dropout_mask_h,
                                             real weightnoise_std = 0.f);
Expression vanilla_lstm_c(const Expression& c_tm1, const Expression& gates_t);  // i ⊙ g + f ⊙ c_tm1
Expression vanilla_lstm_h(const Expression& c_t, const Expression& gates_t);    // o ⊙ tanh(c_t)

}  // namespace dynet
