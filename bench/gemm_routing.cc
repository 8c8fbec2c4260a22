// Measures oneDNN sgemm against Eigen for the product shapes dynamic nets use, to pick the
// routing rule in src/kernels/cpu/gemm.cc. Prints `gemm_<M>x<N>x<K>_<impl>=<ns> ns` lines, and
// `gemm_tn_<M>x<N>x<K>_{onednn,routed}` for Aᵀ·B with a long inner dimension (an output layer's input
// gradient) in one oneDNN call and through cpu::gemm. Times are thread CPU time (steadier than wall
// time on a shared machine).
#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cpu_timer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemv.h"

using bench::time_ns;

int main() {
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{64, 1, 64}, {96, 1, 96}, {128, 1, 128}, {160, 1, 160}, {64, 2, 64}, {256, 1, 256},   {1024, 1, 256}, {10000, 1, 256}, {1, 256, 256},
                          {64, 16, 64},   {256, 16, 256},  {64, 64, 64},   {256, 64, 256},  {256, 256, 256},
                          {1024, 64, 256}, {32, 32, 32},  {128, 4, 128}};
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
  return 0;
}
