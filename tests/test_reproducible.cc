// Same seed, same program, same bits: whatever the thread count of the kernels (OpenMP / helper
// threads) and whichever user thread happens to draw random numbers first.
#include <gtest/gtest.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "kernels/cpu/parallel.h"
#include "temp_dir.h"

extern char** environ;

namespace dynet {
namespace {

using ThreadCount = cpu::OmpThreads;  // OpenMP's thread count for a scope

std::vector<float> values_of(const Tensor& t) { return std::vector<float>(t.v, t.v + t.d.size()); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Restores the process's seed for the tests that run after these in the same process.
class Reproducible : public ::testing::Test {
 protected:
  ~Reproducible() override { reset_rng(1); }
};

// A convolution large enough (> 8M multiply-adds, 8 input channels) to run on oneDNN's threads, and
// products large enough to be split into blocks for helper threads (16M multiply-adds and a side of
// 2048): every gradient has the same bits whatever the thread count.
TEST_F(Reproducible, ConvolutionAndProductGradientsDoNotDependOnTheThreadCount) {
  reset_rng(5);
  ParameterCollection m;
  Parameter F = m.add_parameters({5, 5, 8, 16}, ParameterInitUniform(-0.3f, 0.3f));
  Parameter W = m.add_parameters({2100, 300}, ParameterInitUniform(-0.1f, 0.1f));
  Parameter U = m.add_parameters({2100, 2100}, ParameterInitUniform(-0.1f, 0.1f));
  std::vector<float> image(24 * 24 * 8 * 8), vecs(300 * 40);
  for (size_t k = 0; k < image.size(); ++k) image[k] = float((k * 7919) % 1000) / 500.f - 1.f;
  for (size_t k = 0; k < vecs.size(); ++k) vecs[k] = float((k * 104729) % 997) / 500.f - 1.f;
  struct Result {
    std::vector<float> loss, dF, dW, dU, dx;
  };
  auto run = [&](int threads) {
    ThreadCount tc(threads);
    m.reset_gradient();
    ComputationGraph g;
    Expression x = input(g, Dim({24, 24, 8}, 8), image);
    Expression v = input(g, Dim({300, 40}), vecs);
    Expression y = conv2d(x, parameter(g, F), {1, 1}, true);
    Expression z = parameter(g, W) * v;                   // split by rows of the output
    Expression u = transpose(tanh(z)) * parameter(g, U);  // split by columns
    Expression loss = sum_batches(sum_elems(square(y))) + sum_elems(tanh(z)) + sum_elems(u);
    Result r;
    r.loss = values_of(loss.value());
    g.backward(loss);
    r.dF = values_of(*F.gradients());
    r.dW = values_of(*W.gradients());
    r.dU = values_of(*U.gradients());
    r.dx = values_of(x.gradient());
    return r;
  };
  const Result one = run(1);
  for (int threads : {2, 3, 4}) {
    const Result r = run(threads);
    EXPECT_TRUE(same_bits(r.loss, one.loss)) << threads << " threads";
    EXPECT_TRUE(same_bits(r.dF, one.dF)) << "conv2d filter gradient, " << threads << " threads";
    EXPECT_TRUE(same_bits(r.dx, one.dx)) << "conv2d input gradient, " << threads << " threads";
    EXPECT_TRUE(same_bits(r.dW, one.dW)) << "matrix product gradient, " << threads << " threads";
    EXPECT_TRUE(same_bits(r.dU, one.dU)) << "matrix product gradient, " << threads << " threads";
  }
}

// Runs this test again in a new process with `env` added to the environment; returns its exit status.
int rerun_current_test(const std::vector<std::string>& env) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  std::vector<std::string> vars = env;
  // Without gtest's sharding variables: a shard's child would run the shard's share of one test (none).
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("GTEST_SHARD", 0) != 0 && std::string_view(*e).rfind("GTEST_TOTAL_SHARDS", 0) != 0)
      vars.emplace_back(*e);
  std::vector<char*> envp, argv = {const_cast<char*>("/proc/self/exe"), filter.data()};
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// oneDNN fixes how it splits a convolution's weight gradient over threads when the primitive is made
// (once per geometry and process), so this compares processes started with 1 to 4 OpenMP threads.
TEST_F(Reproducible, ConvolutionFilterGradientIsTheSameInProcessesWithAnyThreadCount) {
  if (const char* out = std::getenv("DYNET_TEST_CONV_OUT")) {  // the child: writes its gradients
    reset_rng(3);
    ParameterCollection m;
    Parameter F = m.add_parameters({3, 3, 16, 32}, ParameterInitUniform(-0.3f, 0.3f));
    Parameter B = m.add_parameters({32}, ParameterInitUniform(-0.3f, 0.3f));
    std::vector<float> image(32 * 32 * 16 * 2);
    for (size_t k = 0; k < image.size(); ++k) image[k] = float((k * 7919) % 1000) / 500.f - 1.f;
    ComputationGraph g;
    Expression x = input(g, Dim({32, 32, 16}, 2), image);
    Expression y = conv2d(x, parameter(g, F), parameter(g, B), {1, 1}, true);
    g.backward(sum_batches(sum_elems(square(y))));
    std::ofstream o(out, std::ios::binary);
    for (const Tensor* t : std::initializer_list<const Tensor*>{&y.value(), F.gradients(), B.gradients(), &x.gradient()})
      o.write(reinterpret_cast<const char*>(t->v), std::streamsize(t->d.size() * sizeof(float)));
    return;
  }
  test::TempDir tmp;
  std::vector<std::string> results;
  for (int threads = 1; threads <= 4; ++threads) {
    const std::string out = tmp.path("conv" + std::to_string(threads));
    const int status = rerun_current_test({"OMP_NUM_THREADS=" + std::to_string(threads), "DYNET_TEST_CONV_OUT=" + out});
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << threads << " threads: status " << status;
    results.push_back(read_bytes(out));
    ASSERT_EQ(results.back().size(), (30 * 30 * 32 * 2 + 3 * 3 * 16 * 32 + 32 + 32 * 32 * 16 * 2) * sizeof(float));
    EXPECT_TRUE(results.back() == results[0]) << "conv2d with " << threads << " threads differs from 1 thread";
  }
}

// Each of kWorkers threads draws dropout masks and random values: what thread t draws depends on the
// seed and its stream, not on which thread starts first (forced here: in order, then in reverse).
constexpr int kWorkers = 4;
std::vector<std::vector<float>> draws_in_threads(bool reverse_start, bool own_streams) {
  reset_rng(99);
  std::vector<std::vector<float>> out(kWorkers);
  std::atomic<int> turn{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kWorkers; ++t)
    ts.emplace_back([&, t] {
      const int my_turn = reverse_start ? kWorkers - 1 - t : t;
      while (turn.load() != my_turn) std::this_thread::yield();
      if (own_streams) set_random_stream(unsigned(t) + 1);
      ComputationGraph g;
      Expression mask = dropout(ones(g, {64}), 0.5f);
      Expression noise = random_normal(g, {16});
      out[t] = values_of(mask.value());
      const auto n = values_of(noise.value());
      out[t].insert(out[t].end(), n.begin(), n.end());
      turn.fetch_add(1);
      for (int k = 0; k < 10; ++k) {  // later graphs of the same thread continue its stream
        ComputationGraph h;
        const auto more = values_of(dropout(ones(h, {8}), 0.5f).value());
        out[t].insert(out[t].end(), more.begin(), more.end());
      }
    });
  for (auto& th : ts) th.join();
  return out;
}

TEST_F(Reproducible, ThreadsDrawTheSameNumbersWhicheverStartsFirst) {
  for (bool own_streams : {false, true}) {
    const auto in_order = draws_in_threads(false, own_streams);
    const auto reversed = draws_in_threads(true, own_streams);
    for (int t = 0; t < kWorkers; ++t) EXPECT_TRUE(same_bits(in_order[t], reversed[t])) << "thread " << t;
    if (!own_streams) {
      // Stream 0 everywhere: every thread draws the same numbers.
      for (int t = 1; t < kWorkers; ++t) EXPECT_TRUE(same_bits(in_order[t], in_order[0])) << "thread " << t;
    } else {
      // Own streams: the threads' numbers differ from each other.
      for (int t = 1; t < kWorkers; ++t) EXPECT_FALSE(same_bits(in_order[t], in_order[0])) << "thread " << t;
    }
  }
  // set_random_stream restarts the stream: the same thread drawing twice from stream 2 repeats itself.
  reset_rng(99);
  set_random_stream(2);
  ComputationGraph g;
  const auto a = values_of(random_uniform(g, {32}, 0.f, 1.f).value());
  set_random_stream(2);
  ComputationGraph h;
  const auto b = values_of(random_uniform(h, {32}, 0.f, 1.f).value());
  set_random_stream(0);
  ComputationGraph k;
  const auto c = values_of(random_uniform(k, {32}, 0.f, 1.f).value());
  EXPECT_TRUE(same_bits(a, b));
  EXPECT_FALSE(same_bits(a, c));
}

}  // namespace
}  // namespace dynet
