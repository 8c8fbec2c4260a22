// Measures oneDNN sgemm against Eigen for the product shapes dynamic nets use, to pick the
// routing rule in src/kernels/cpu/gemm.cc. Prints `gemm_<M>x<N>x<K>_<impl>=<ns> ns` lines, and
// `gemm_tn_<M>x<N>x<K>_{onednn,routed}` for Aᵀ·B with a long inner dimension (an output layer's input
// gradient) in one oneDNN call and through cpu::gemm, and `skinny_{nn,tn}_<M>x<N>x<K>_{onednn,skinny}`
// for products with few columns whose large operand comes from memory, not cache (an output layer's W
// between time steps: the caches are flushed before each call; `_skinny_in_cache`: the same kernel with
// its operands in cache). Times are thread CPU time (steadier than wall time on a shared machine), with
// oneDNN on the calling thread alone, as cpu::gemm runs it (on its default OpenMP team the other threads'
// time would not be counted).
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cpu_timer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_skinny.h"
#include "kernels/cpu/gemv.h"

using bench::time_ns;

int main() {
  omp_set_num_threads(1);
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{64, 1, 64}, {96, 1, 96}, {128, 1, 128}, {160, 1, 160}, {64, 2, 64}, {256, 1, 256},   {1024, 1, 256}, {10000, 1, 256}, {1, 256, 256},
                          {64, 16, 64},   {256, 16, 256},  {64, 64, 64},   {256, 64, 256},  {256, 256, 256},
                          {1024, 64, 256}, {32, 32, 32},  {128, 4, 128},
                          // the bilstm task's gate products (hidden 200, 64 sequences) and a large square
                          // one: how close the LSTM products run to this core's peak
                          {800, 64, 200}, {800, 64, 128}, {1024, 1024, 1024}};
  for (const Shape& s : shapes) {
    Eigen::MatrixXf A = Eigen::MatrixXf::Random(s.M, s.K), B = Eigen::MatrixXf::Random(s.K, s.N),
                    C = Eigen::MatrixXf::Zero(s.M, s.N);
    const double flops = 2.0 * s.M * s.N * s.K;
    const int reps = std::max(1, int(2e8 / flops));
    double eigen = time_ns([&] { C.noalias() = A * B; }, reps);
    double dnnl = time_ns(
        [&] {
          dnnl_sgemm('N', 'N', s.N, s.M, s.K, 1.f, B.data(), s.K, A.data(), s.M, 0.f, C.data(), s.M);
        },
        reps);
    std::printf("gemm_%dx%dx%d_eigen=%.0f ns\ngemm_%dx%dx%d_onednn=%.0f ns\n", s.M, s.N, s.K, eigen, s.M, s.N, s.K,
                dnnl);
    if (s.N == 1) {
      double own = time_ns([&] { dynet::cpu::gemv_n(s.M, s.K, 1.f, A.data(), s.M, B.data(), 1, 0.f, C.data(), 1); }, reps);
      double own_t = time_ns([&] { dynet::cpu::gemv_t(s.M, s.K, 1.f, A.data(), s.M, B.data(), 1, 0.f, C.data(), 1); }, reps);
      Eigen::MatrixXf G = Eigen::MatrixXf::Zero(s.M, s.K);
      Eigen::VectorXf u = Eigen::VectorXf::Random(s.M), w = Eigen::VectorXf::Random(s.K);
      double own_ger = time_ns([&] { dynet::cpu::ger(s.M, s.K, 1.f, u.data(), 1, w.data(), 1, G.data(), s.M); }, reps);
      double eigen_ger = time_ns([&] { G.noalias() += u * w.transpose(); }, reps);
      std::printf("gemv_%dx%d_own=%.0f ns\ngemv_t_%dx%d_own=%.0f ns\nger_%dx%d_own=%.0f ns\nger_%dx%d_eigen=%.0f ns\n", s.M,
                  s.K, own, s.M, s.K, own_t, s.M, s.K, own_ger, s.M, s.K, eigen_ger);
    }
  }
  const Shape long_inner[] = {{256, 4, 10000}, {256, 16, 10000}, {256, 64, 10000}, {256, 300, 10000}, {1024, 64, 30000}};
  for (const Shape& s : long_inner) {
    Eigen::MatrixXf A = Eigen::MatrixXf::Random(s.K, s.M), B = Eigen::MatrixXf::Random(s.K, s.N),
                    C = Eigen::MatrixXf::Zero(s.M, s.N);
    const int reps = std::max(1, int(2e8 / (2.0 * s.M * s.N * s.K)));
    double one_call = time_ns(
        [&] { dnnl_sgemm('N', 'T', s.N, s.M, s.K, 1.f, B.data(), s.K, A.data(), s.K, 1.f, C.data(), s.M); }, reps);
    double routed = time_ns(
        [&] { dynet::cpu::gemm(true, false, s.M, s.N, s.K, 1.f, A.data(), s.K, B.data(), s.K, 1.f, C.data(), s.M); },
        reps);
    std::printf("gemm_tn_%dx%dx%d_onednn=%.0f ns\ngemm_tn_%dx%dx%d_routed=%.0f ns\n", s.M, s.N, s.K, one_call, s.M, s.N,
                s.K, routed);
  }
  // Few columns, A cold: W·B forward and Wᵀ·G backward (as one oneDNN call, and on a transposed copy as
  // gemm_tn_unchanged makes from a matrix's second use in a backward pass) against the skinny kernels.
  using dynet::cpu::SkinnyIsa;
  const SkinnyIsa isa = dynet::cpu::skinny_isa();
  std::vector<float> junk(size_t(64) << 20 >> 2);
  auto cold_ns = [&](auto f) {
    std::vector<double> t;
    for (int r = 0; r < 9; ++r) {
      for (size_t i = 0; i < junk.size(); i += 16) junk[i] += 1.f;
      const double a = bench::cpu_ns();
      f();
      t.push_back(bench::cpu_ns() - a);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const Shape skinny[] = {{10000, 1, 256}, {10000, 2, 256}, {10000, 4, 256}, {10000, 6, 256}, {10000, 8, 256}, {10000, 16, 256}, {10000, 32, 256},
                          {10000, 64, 256}, {1024, 16, 128}, {1024, 16, 256}};
  for (const Shape& s : skinny) {
    if (isa == SkinnyIsa::kNone) break;
    Eigen::MatrixXf W = Eigen::MatrixXf::Random(s.M, s.K), Wt = W.transpose(), B = Eigen::MatrixXf::Random(s.K, s.N),
                    C = Eigen::MatrixXf::Zero(s.M, s.N), G = Eigen::MatrixXf::Random(s.M, s.N),
                    D = Eigen::MatrixXf::Zero(s.K, s.N);
    const double nn_onednn = cold_ns(
        [&] { dnnl_sgemm('N', 'N', s.N, s.M, s.K, 1.f, B.data(), s.K, W.data(), s.M, 0.f, C.data(), s.M); });
    const double nn_skinny = cold_ns([&] {
      dynet::cpu::gemm_skinny_nn(isa, s.M, s.N, s.K, 1.f, W.data(), s.M, B.data(), s.K, 0.f, C.data(), s.M);
    });
    const double tn_onednn = cold_ns(
        [&] { dnnl_sgemm('N', 'T', s.N, s.K, s.M, 1.f, G.data(), s.M, W.data(), s.M, 0.f, D.data(), s.K); });
    const double tn_copy = cold_ns(
        [&] { dnnl_sgemm('N', 'N', s.N, s.K, s.M, 1.f, G.data(), s.M, Wt.data(), s.K, 0.f, D.data(), s.K); });
    const double tn_skinny = cold_ns([&] {
      dynet::cpu::gemm_skinny_tn(isa, s.K, s.N, s.M, 1.f, W.data(), s.M, G.data(), s.M, 0.f, D.data(), s.K);
    });
    std::printf("skinny_nn_%dx%dx%d_onednn=%.0f ns\nskinny_nn_%dx%dx%d_skinny=%.0f ns\n", s.M, s.N, s.K, nn_onednn, s.M,
                s.N, s.K, nn_skinny);
    std::printf("skinny_tn_%dx%dx%d_onednn=%.0f ns\n", s.K, s.N, s.M, tn_onednn);
    std::printf("skinny_tn_%dx%dx%d_onednn_on_copy=%.0f ns\n", s.K, s.N, s.M, tn_copy);
    std::printf("skinny_tn_%dx%dx%d_skinny=%.0f ns\n", s.K, s.N, s.M, tn_skinny);
    // W in cache, as when its products of all time steps run back to back (autobatched).
    const double tn_skinny_hot = time_ns(
        [&] { dynet::cpu::gemm_skinny_tn(isa, s.K, s.N, s.M, 1.f, W.data(), s.M, G.data(), s.M, 0.f, D.data(), s.K); },
        9);
    std::printf("skinny_tn_%dx%dx%d_skinny_in_cache=%.0f ns\n", s.K, s.N, s.M, tn_skinny_hot);
  }
  return 0;
}
