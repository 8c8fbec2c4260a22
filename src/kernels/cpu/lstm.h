// Elementwise kernels of the fused LSTM nodes (vanilla_lstm_gates/_c/_h). Plain loops compiled for
// AVX-512, AVX2+FMA and the baseline (picked at load time): Eigen here is built for SSE2, and these
// passes are most of an LSTM step's time besides its GEMMs. Gate blocks are stacked i, f, o, g (H rows
// each); matrices are column-major {4H, B}.
#pragma once

namespace dynet::cpu {

// In place, with a = x + bias (+ 1 on the forget rows [H, 2H): DyNet's fixed forget bias): rows [0, 3H)
// of every column become σ(a), rows [3H, 4H) tanh(a). Adding the bias here rather than before the
// products saves a pass over the gates.
void lstm_activate_gates(float* gates, const float* bias, long H, long B);
// d = dy ⊙ y ⊙ (1 - y) on rows [0, 3H), dy ⊙ (1 - y²) on rows [3H, 4H); y are activated gates. With
// col_sum (4H floats), also col_sum = Σ over the B columns of d (B >= 1), summed in column order as
// lstm_bias_grad sums them: the bias gradient without a second pass over d.
void lstm_gates_grad(const float* y, const float* dy, float* d, long H, long B, float* col_sum = nullptr);
// db += Σ over the B columns of d (4H rows each); db = ... when `assign`.
void lstm_bias_grad(const float* d, long H, long B, float* db, bool assign);

// dst {rows, B} = (or += unless assign) the first `rows` rows of src, whose columns are ls floats apart.
void lstm_copy_rows(const float* src, long ls, float* dst, long rows, long B, bool assign);

// B columns of H (gates: 4H) elements; each argument's columns are `*s` floats apart (0: one column
// shared by all, an unbatched argument), outputs without a stride argument H apart. The backward kernels
// add to their gradient (+=), or write it (=) when `assign` (an unbatched gradient: written by column 0,
// added to by the others); a kernel that contributes to some blocks of dgates only then writes zeros to
// the others, unless `own_blocks` (BackwardArgs::own_quarters: the other blocks' kernel writes those).
// c = i ⊙ g + f ⊙ c_prev
void lstm_c_forward(const float* gates, long gs, const float* c_prev, long cs, float* c, long H, long B);
// dc_prev += dc ⊙ f
void lstm_c_backward_c(const float* gates, long gs, const float* dc, float* dc_prev, long ps, long H, long B,
                       bool assign);
// di += dc ⊙ g, df += dc ⊙ c_prev, dg += dc ⊙ i (dgates has 4H rows)
void lstm_c_backward_gates(const float* gates, long gs, const float* c_prev, long cs, const float* dc, float* dgates,
                           long ds, long H, long B, bool assign, bool own_blocks = false);
// tanh_c = tanh(c), h = o ⊙ tanh_c
void lstm_h_forward(const float* gates, long gs, const float* c, long cs, float* tanh_c, float* h, long H, long B);
// dc += dh ⊙ o ⊙ (1 - tanh_c²)
void lstm_h_backward_c(const float* gates, long gs, const float* tanh_c, const float* dh, float* dc, long ds, long H,
                       long B, bool assign);
// do += dh ⊙ tanh_c (dgates has 4H rows)
void lstm_h_backward_gates(const float* tanh_c, const float* dh, float* dgates, long ds, long H, long B, bool assign,
                           bool own_blocks = false);

}  // namespace dynet::cpu
