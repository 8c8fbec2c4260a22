#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#endif

#include "core/mem.h"
#include "core/op.h"
#include "dynet/expr.h"
#include "dynet/init.h"

namespace dynet {
namespace {

TEST(Graph, EvaluationIsLazyAndIncremental) {
  ComputationGraph g;
  float x = 0.5f;
  Expression a = input(g, &x);
  Expression b = tanh(a);
  Expression c = exp(b);
  EXPECT_EQ(g.num_evaluated(), 0u);  // declaring computes nothing
  EXPECT_NEAR(as_scalar(b.value()), std::tanh(0.5f), 1e-6);
  EXPECT_EQ(g.num_evaluated(), 2u);  // only up to b
  EXPECT_NEAR(as_scalar(c.value()), std::exp(std::tanh(0.5f)), 1e-6);
  EXPECT_EQ(g.num_evaluated(), 3u);
  // The pointer input is re-read by forward (full recompute), not by incremental_forward.
  x = 1.f;
  EXPECT_NEAR(as_scalar(g.incremental_forward(c)), std::exp(std::tanh(0.5f)), 1e-6);
  EXPECT_NEAR(as_scalar(g.forward(c)), std::exp(std::tanh(1.f)), 1e-6);
}

TEST(Graph, BackwardGivesGradients) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({1}, ParameterInitConst(0.3f));
  ComputationGraph g;
  Expression w = parameter(g, p);
  Expression y = exp(tanh(w));  // dy/dw = e^tanh(w) (1 - tanh²(w))
  g.backward(y);
  const float t = std::tanh(0.3f);
  const float expect = std::exp(t) * (1 - t * t);
  EXPECT_NEAR(as_scalar(w.gradient()), expect, 1e-5);
  EXPECT_NEAR(p.get_storage().g.v[0], expect, 1e-5);
  // A second backward accumulates into the parameter.
  g.backward(y);
  EXPECT_NEAR(p.get_storage().g.v[0], 2 * expect, 1e-5);
}

// A weight used by many matrix-vector products gets its gradient from deferred rank-1 updates run as
// GEMMs over slabs of the gathered columns (simple executor: 200 columns of a 20000-row weight make
// two slabs); under both executors the gradient is Σ_t g_t x_tᵀ.
TEST(Graph, WeightGradientOfManyProductsMatchesTheSumOfOuterProducts) {
  const unsigned m = 20000, k = 3, steps = 200;
  std::vector<std::vector<float>> gs(steps, std::vector<float>(m)), xs(steps, std::vector<float>(k));
  for (unsigned t = 0; t < steps; ++t) {
    for (unsigned r = 0; r < m; ++r) gs[t][r] = std::sin(0.001f * float(r) + 0.37f * float(t));
    for (unsigned c = 0; c < k; ++c) xs[t][c] = std::cos(1.7f * float(c) - 0.11f * float(t));
  }
  for (int strategy : {0, 1}) {
    ParameterCollection pc;
    Parameter p = pc.add_parameters({m, k}, ParameterInitConst(0.01f));
    ComputationGraph g;
    g.set_execution_strategy(strategy);
    Expression w = parameter(g, p);
    std::vector<Expression> terms;
    for (unsigned t = 0; t < steps; ++t)
      terms.push_back(dot_product(input(g, {m}, gs[t]), w * input(g, {k}, xs[t])));
    g.backward(sum(terms));
    const float* grad = p.get_storage().g.v;
    double worst = 0;
    for (unsigned c = 0; c < k; ++c)
      for (unsigned r = 0; r < m; r += 7) {
        double expect = 0;
        for (unsigned t = 0; t < steps; ++t) expect += double(gs[t][r]) * xs[t][c];
        worst = std::max(worst, std::abs(grad[r + c * m] - expect));
      }
    EXPECT_LT(worst, 1e-4) << "strategy " << strategy;
  }
}

TEST(Graph, BackwardOnNonScalarThrows) {
  ComputationGraph g;
  Expression x = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  EXPECT_THROW(g.backward(tanh(x)), std::invalid_argument);
}

TEST(Graph, GradientOfConstantNodesNeedsFull) {
  ComputationGraph g;
  Expression x = input(g, 0.2f);
  Expression y = tanh(x);
  EXPECT_THROW(x.gradient(), std::runtime_error);  // no backward yet
  g.backward(y);
  // As in DyNet: without `full`, nodes off the parameter paths get zero gradients, and the loss dE/dE = 1.
  EXPECT_EQ(as_scalar(x.gradient()), 0.f);
  EXPECT_EQ(as_scalar(y.gradient()), 1.f);
  g.backward(y, true);
  EXPECT_NEAR(as_scalar(x.gradient()), 1 - std::pow(std::tanh(0.2f), 2), 1e-6);
}

TEST(Graph, StaleExpressionsThrow) {
  ComputationGraph g;
  Expression x = input(g, 1.f);
  g.clear();
  EXPECT_TRUE(x.is_stale());
  EXPECT_THROW(x.value(), std::runtime_error);
  EXPECT_THROW(tanh(x), std::runtime_error);
  Expression empty;
  EXPECT_THROW(tanh(empty), std::invalid_argument);
}

TEST(Graph, ExpressionsFromDifferentGraphsDoNotMix) {
  ComputationGraph g1, g2;
  Expression a = input(g1, Dim({1}), std::vector<float>{1.f});
  Expression b = input(g2, Dim({1}), std::vector<float>{2.f});
  std::vector<Expression> both = {a, b};
  EXPECT_THROW(make_node_n(op_id("harness_loss"), both), std::invalid_argument);
}

TEST(Graph, CheckpointAndRevert) {
  ComputationGraph g;
  Expression x = input(g, 0.5f);
  Expression y = tanh(x);
  y.value();
  g.checkpoint();
  Expression z = exp(y);
  EXPECT_NEAR(as_scalar(z.value()), std::exp(std::tanh(0.5f)), 1e-6);
  EXPECT_EQ(g.size(), 3u);
  g.revert();
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(g.num_evaluated(), 2u);
  EXPECT_THROW(z.value(), std::invalid_argument);  // z no longer exists
  Expression w = log(y);
  EXPECT_NEAR(as_scalar(w.value()), std::log(std::tanh(0.5f)), 1e-6);
  // Nodes past the reverted ones' count are computed too (the executor's vectors outgrow the graph).
  Expression v = square(w);
  EXPECT_NEAR(as_scalar(sqrt(v).value()), -std::log(std::tanh(0.5f)), 1e-6);
  EXPECT_THROW(g.revert(), std::runtime_error);
}

TEST(Graph, CheckValidityNamesTheNode) {
  ComputationGraph g;
  g.set_immediate_compute(true);
  g.set_check_validity(true);
  Expression x = input(g, -1.f);
  try {
    log(x);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("log"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
  }
}

TEST(Graph, ShapeErrorsLeaveTheGraphUsable) {
  ComputationGraph g;
  EXPECT_THROW(input(g, Dim({2}), std::vector<float>{1}), std::invalid_argument);
  EXPECT_EQ(g.size(), 0u);
  Expression x = input(g, 2.f);
  EXPECT_NEAR(as_scalar(square(x).value()), 4.f, 1e-6);
}

TEST(Graph, TwoGraphsOnTwoThreadsShareParameters) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({1}, ParameterInitConst(0.1f));
  auto work = [&](float xv, float* out) {
    for (int it = 0; it < 200; ++it) {
      ComputationGraph g;
      Expression y = exp(tanh(parameter(g, p)));
      *out = as_scalar(y.value()) * xv;
      g.backward(y);
    }
  };
  float a = 0, b = 0;
  std::thread t1(work, 1.f, &a), t2(work, 2.f, &b);
  t1.join();
  t2.join();
  const float t = std::tanh(0.1f);
  EXPECT_NEAR(a, std::exp(t), 1e-6);
  EXPECT_NEAR(b, 2 * std::exp(t), 1e-6);
  // 400 backward passes accumulated without losing updates.
  EXPECT_NEAR(p.get_storage().g.v[0], 400 * std::exp(t) * (1 - t * t), 1e-2);
}

TEST(Graph, GraphvizAndDumpDescribeNodes) {
  ComputationGraph g;
  Expression y = tanh(input(g, 1.f));
  y.value();
  testing::internal::CaptureStderr();
  g.print_graphviz();
  g.dump("", true, false);
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("digraph"), std::string::npos);
  EXPECT_NE(out.find("tanh"), std::string::npos);
}

TEST(Graph, GraphvizNamesParameters) {
  ParameterCollection pc;
  Parameter W = pc.add_parameters({3, 2}, "W");
  LookupParameter E = pc.add_lookup_parameters(5, {2}, "E");
  ComputationGraph g;
  Expression y = tanh(parameter(g, W) * lookup(g, E, 1u));
  (void)y;
  std::ostringstream os;
  g.print_graphviz(os);
  const std::string dot = os.str();
  EXPECT_NE(dot.find("= parameter(/W) {3,2}"), std::string::npos) << dot;
  EXPECT_NE(dot.find("= lookup(/E) {2}"), std::string::npos) << dot;
  EXPECT_EQ(dot.rfind("digraph G {", 0), 0u) << dot;
}

TEST(MemPool, GrowsPastItsInitialSizeWithoutMovingAllocations) {
  MemPool pool(1024);
  float* first = pool.allocate_floats(100);
  first[0] = 42.f;
  std::vector<float*> ps;
  for (int i = 0; i < 100; ++i) ps.push_back(pool.allocate_floats(100));
  EXPECT_GT(pool.num_blocks(), 1u);
  EXPECT_EQ(first[0], 42.f);
  for (float* p : ps) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % MemPool::kAlign, 0u);
  const size_t cap = pool.capacity();
  pool.free_all();
  EXPECT_EQ(pool.num_blocks(), 1u);  // merged: the next round needs no growth
  EXPECT_GE(pool.capacity(), cap);
  MemPool::Mark m = pool.mark();
  pool.allocate_floats(1000);
  pool.revert(m);
  EXPECT_EQ(pool.used(), m.used);
}

// As in core/mem.cc: pool blocks are mappings on Linux, except under AddressSanitizer.
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
long minor_faults_so_far() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(MemPool, MergingAGrownChainKeepsItsTouchedPages) {
  // The chain's last block (the largest) is extended in place of a fresh block of the total size, so
  // the pages the last graph touched there are not faulted in again by the next one.
  MemPool pool(1 << 20);
  pool.allocate(1 << 20);
  const size_t big = size_t(32) << 20;
  char* p = static_cast<char*>(pool.allocate(big));
  std::memset(p, 1, big);
  ASSERT_EQ(pool.num_blocks(), 2u);
  pool.free_all();
  ASSERT_EQ(pool.num_blocks(), 1u);
  const long before = minor_faults_so_far();
  char* q = static_cast<char*>(pool.allocate(big));
  std::memset(q, 2, big);
  const long faults = minor_faults_so_far() - before;
  EXPECT_LT(faults, 64) << "a fresh 32 MB block takes 8192 faults of 4 KB pages";
  EXPECT_EQ(q[big - 1], 2);
}

bool on_huge_page_boundary(const void* p) { return reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20) == 0; }

TEST(MemPool, BlocksOfTwoMegabytesStartOnAHugePageBoundary) {
  // Transparent huge pages back only 2 MB ranges that start on a 2 MB boundary; a block placed
  // anywhere else (as mmap and mremap do for lengths that are not multiples of 2 MB) gets none.
  MemPool pool(1 << 20);
  char* small = static_cast<char*>(pool.allocate(1 << 20));
  const size_t odd = (size_t(3) << 20) + 4096 + 64;
  char* big = static_cast<char*>(pool.allocate(odd));
  EXPECT_TRUE(on_huge_page_boundary(big));
  std::memset(small, 1, 1 << 20);
  std::memset(big, 2, odd);
  pool.free_all();  // the last block, on a boundary, grown to the total: still on one
  ASSERT_EQ(pool.num_blocks(), 1u);
  char* merged = static_cast<char*>(pool.allocate(1));
  EXPECT_TRUE(on_huge_page_boundary(merged));
  EXPECT_EQ(merged[odd - 1], 2);
  EXPECT_EQ(merged[0], 2);

  // Two 1 MB blocks, each placed anywhere, merge into a 2 MB one: moved onto a boundary, contents kept.
  MemPool chain(1 << 20);
  chain.allocate(1 << 20);
  char* second = static_cast<char*>(chain.allocate(1 << 20));
  for (size_t i = 0; i < (1 << 20); i += 4096) second[i] = char(i >> 12);
  chain.free_all();
  ASSERT_EQ(chain.num_blocks(), 1u);
  char* moved = static_cast<char*>(chain.allocate(1));
  EXPECT_TRUE(on_huge_page_boundary(moved));
  for (size_t i = 0; i < (1 << 20); i += 4096) ASSERT_EQ(moved[i], char(i >> 12)) << "byte " << i;
}
#endif

// A training loop that builds a new graph per step, as DyNet programs do. Returns the loss.
float train_step_on_new_graph(Parameter& p, int width, int depth) {
  ComputationGraph g;
  std::vector<float> data(width, 0.01f);
  Expression y = cmult(input(g, Dim({unsigned(width)}), data), parameter(g, p));
  for (int i = 0; i < depth; ++i) y = tanh(y);
  Expression loss = sum_elems(y);
  const float v = as_scalar(loss.value());
  g.backward(loss);
  return v;
}

TEST(Graph, NewGraphsReuseTheMemoryOfDestroyedOnes) {
  // Far beyond the initial pool sizes, so the first graphs grow their pools; later graphs must get
  // that memory back instead of asking the system (and faulting fresh pages in) again.
  ParameterCollection pc;
  const int width = 1 << 16;
  Parameter p = pc.add_parameters({unsigned(width)}, ParameterInitConst(1.f));
  const float expected = width * std::tanh(std::tanh(0.01f));
  for (int step = 0; step < 3; ++step) EXPECT_NEAR(train_step_on_new_graph(p, width, 2), expected, 1e-4 * expected);
  const size_t taken = MemPool::system_bytes();
  for (int step = 0; step < 10; ++step) EXPECT_NEAR(train_step_on_new_graph(p, width, 2), expected, 1e-4 * expected);
  EXPECT_EQ(MemPool::system_bytes(), taken);
  // A smaller graph fits in the kept memory too.
  Parameter q = pc.add_parameters({unsigned(width / 4)}, ParameterInitConst(1.f));
  EXPECT_NEAR(train_step_on_new_graph(q, width / 4, 1), width / 4 * std::tanh(0.01f), 1e-4 * width);
  EXPECT_EQ(MemPool::system_bytes(), taken);
  // cleanup() frees what was kept: the next graph takes memory from the system again.
  cleanup();
  train_step_on_new_graph(p, width, 2);
  EXPECT_GT(MemPool::system_bytes(), taken);
}

TEST(Graph, ARecycledExecutorStartsEmpty) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({3}, ParameterInitConst(2.f));
  {
    ComputationGraph g;
    Expression y = square(parameter(g, p));
    y.value();
    g.backward(sum_elems(y));
    g.checkpoint();  // a revert leaves the executor with fewer computed flags than values
    exp(exp(exp(y))).value();
    g.revert();
    exp(y).value();  // computed in the place of a reverted node
  }
  ComputationGraph g;  // takes the executor of the graph above
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.num_evaluated(), 0u);
  Expression x = input(g, Dim({3}), std::vector<float>{1, 2, 3});
  EXPECT_THROW(g.get_gradient(x.i), std::runtime_error);  // no backward on this graph yet
  Expression y = cmult(x, parameter(g, p));
  EXPECT_EQ(g.num_evaluated(), 0u);
  const Tensor& v = y.value();
  EXPECT_FLOAT_EQ(v.v[0], 2.f);
  EXPECT_FLOAT_EQ(v.v[2], 6.f);
  Expression z = sum_elems(square(square(y)));  // more nodes than the first graph had
  EXPECT_FLOAT_EQ(as_scalar(z.value()), 16.f + 256.f + 1296.f);
}

TEST(Graph, GraphsComeAndGoOnManyThreads) {
  // Executors move between threads through the spare list; every graph must compute its own values.
  ParameterCollection pc;
  Parameter p = pc.add_parameters({1}, ParameterInitConst(0.5f));
  std::atomic<int> wrong{0};
  auto work = [&](int id) {
    for (int it = 0; it < 100; ++it) {
      ComputationGraph g;
      const int n = 1 + (id + it) % 7;
      std::vector<float> data(n * 1000, float(id));
      Expression s = sum_elems(input(g, Dim({unsigned(n * 1000)}), data) * parameter(g, p));
      if (std::abs(as_scalar(s.value()) - 0.5f * id * n * 1000) > 1e-3f * (1 + id * n * 1000)) ++wrong;
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < 6; ++id) threads.emplace_back(work, id);
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Graph, LargeGraphsGrowMemory) {
  // Far more than the initial 1 MB per pool: the pools must grow transparently.
  ComputationGraph g;
  std::vector<float> data(1 << 16, 0.01f);
  Expression x = input(g, Dim({1 << 16}), data);
  Expression y = x;
  for (int i = 0; i < 64; ++i) y = tanh(y);
  EXPECT_NEAR(y.value().v[123], std::tanh(0.01f), 1e-2);
}

}  // namespace
}  // namespace dynet

namespace dynet {
namespace {
TEST(Devices, ToDeviceOnTheCpuIsTheSameExpression) {
  ComputationGraph g;
  Expression x = input(g, 2.f);
  Expression y = to_device(x, cpu_device());
  EXPECT_EQ(y.i, x.i);
  EXPECT_EQ(get_device_manager_device("CPU"), cpu_device());
  EXPECT_THROW(get_device_manager_device("GPU:999"), std::invalid_argument);  // never set up, GPUs or not
  Device gpu(0, DeviceType::GPU, "GPU:0");
  EXPECT_THROW(to_device(x, &gpu), std::invalid_argument);
}
}  // namespace
}  // namespace dynet

namespace dynet {
namespace {
// Expressions outliving their graph: every use throws a clear error, and nothing reads the freed graph
// (the check goes through the live-graph table; ASan runs of this test show no use-after-free).
TEST(Graph, ExpressionsOfADestroyedGraphThrow) {
  Expression x, y;
  {
    auto g = std::make_unique<ComputationGraph>();
    x = input(*g, 2.f);
    y = tanh(x);
    y.value();
  }
  for (const Expression* e : {&x, &y}) {
    EXPECT_TRUE(e->is_stale());
    try {
      e->value();
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& err) {
      EXPECT_NE(std::string(err.what()).find("destroyed"), std::string::npos) << err.what();
    }
    EXPECT_THROW(e->gradient(), std::runtime_error);
    EXPECT_THROW(e->dim(), std::runtime_error);
  }
  EXPECT_THROW(tanh(x), std::runtime_error);
  EXPECT_THROW(x + y, std::runtime_error);
  // A new graph (possibly at the same address, in the same slot) does not revive them.
  ComputationGraph g2;
  Expression z = input(g2, 1.f);
  EXPECT_TRUE(x.is_stale());
  EXPECT_THROW(x + z, std::runtime_error);
  EXPECT_NEAR(as_scalar(tanh(z).value()), std::tanh(1.f), 1e-6);
}

TEST(Graph, GraphIdsAreUniqueAcrossClearAndDestruction) {
  std::vector<uint64_t> ids;
  for (int k = 0; k < 3; ++k) {
    ComputationGraph g;
    ids.push_back(g.get_id());
    g.clear();
    ids.push_back(g.get_id());
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
}

TEST(Graph, FailedNodeDoesNotBlockUnrelatedReads) {
  ComputationGraph g;
  Expression bad = inverse(input(g, Dim({2, 2}), std::vector<float>{1, 2, 2, 4}));  // singular
  Expression ok = tanh(input(g, 0.5f));
  EXPECT_THROW(bad.value(), std::exception);
  EXPECT_NEAR(as_scalar(ok.value()), std::tanh(0.5f), 1e-6);
  EXPECT_THROW(bad.value(), std::exception);  // still an error, not garbage
}

// DyNet's input() read the first dim.size() values of a longer vector (programs pass a reused buffer);
// a shorter one is an error, at building (a copied vector) or at the forward that reads it (a pointer).
TEST(Graph, ParametersOutliveTheirCollectionWhileAGraphReadsThem) {
  // A builder made and dropped in a helper function takes its collection with it, while the graph built
  // from its parameters is evaluated afterwards: the graph keeps what its nodes read.
  ComputationGraph g;
  Expression loss;
  std::weak_ptr<ParameterStorage> w;
  std::weak_ptr<LookupParameterStorage> t;
  {
    ParameterCollection pc;
    Parameter p = pc.add_parameters({3}, ParameterInitConst(2.f));
    LookupParameter lp = pc.add_lookup_parameters(4, {3}, ParameterInitConst(1.f));
    w = p.p;
    t = lp.p;
    loss = sum_elems(parameter(g, p) + const_parameter(g, p) + lookup(g, lp, 2u) +
                     sum_batches(lookup(g, lp, std::vector<unsigned>{1, 3}))) +
           sum_elems(parameter(g, lp));
  }
  EXPECT_FALSE(w.expired());
  EXPECT_FALSE(t.expired());
  EXPECT_FLOAT_EQ(as_scalar(loss.value()), 3 * (2 + 2 + 1 + 2) + 12);
  g.backward(loss);
  EXPECT_FLOAT_EQ(as_vector(w.lock()->g)[0], 1.f);
  g.clear();
  EXPECT_TRUE(w.expired());
  EXPECT_TRUE(t.expired());
}

TEST(Graph, InputTakesTheFirstValuesOfALongerVector) {
  ComputationGraph g;
  const std::vector<float> five{1, 2, 3, 4, 5};
  EXPECT_EQ(as_vector(input(g, Dim({3}), five).value()), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(as_vector(input(g, Dim({2}, 2), five).value()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(input(g, Dim({6}), five), std::invalid_argument);
  std::vector<float> buffer{7, 8, 9, 10};
  Expression x = input(g, Dim({3}), &buffer);
  EXPECT_EQ(as_vector(x.value()), (std::vector<float>{7, 8, 9}));
  Expression y = 2.f * input(g, Dim({3}), &buffer);
  buffer.resize(2);
  EXPECT_THROW(y.value(), std::invalid_argument);
  buffer = {1, 1, 1, 1, 1};
  EXPECT_EQ(as_vector(y.value()), (std::vector<float>{2, 2, 2}));  // the graph stays usable
}

}  // namespace
}  // namespace dynet
