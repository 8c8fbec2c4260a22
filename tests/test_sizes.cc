// Element counts past 2^32: Dim sizes are 64-bit, shapes too large to exist or to allocate throw errors
// naming the op or parameter and the shape, and the graph and model stay usable afterwards. Tensors
// of more than 2^32 floats take 16 GB; the test that really builds one (a lookup table) touches only
// a few of its pages and skips where the address space is not there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dynet/expr.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/training.h"
#include "op_test_util.h"

namespace dynet {
namespace {

using test::message_of;

constexpr unsigned k2_16 = 1u << 16;

// Leaves the (zeroed, lazily committed) values as they are: memory is only used where it is written.
struct NoInit : ParameterInit {
  void initialize_params(Tensor&) const override {}
};

bool under_sanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

TEST(Sizes, DimCountsIn64Bits) {
  const Dim d({k2_16, k2_16 + 1});
  EXPECT_EQ(d.size(), 4295032832ull);  // DyNet's unsigned size() gave 65536
  EXPECT_EQ(d.batch_size(), 4295032832ull);
  EXPECT_EQ(Dim({k2_16, k2_16}, k2_16).size(), 1ull << 48);
  EXPECT_EQ(Dim({k2_16, k2_16 + 1}).checked_size("test"), 4295032832ull);
  unsigned n = Dim({3, 4}).size();  // DyNet code assigning sizes to unsigned still compiles
  EXPECT_EQ(n, 12u);
  // 2^93 elements wrap even in 64 bits: checked_size refuses them, naming the caller and the shape.
  const std::string e = message_of([] { (void)Dim({1u << 31, 1u << 31, 1u << 31}).checked_size("my_op"); });
  EXPECT_NE(e.find("my_op"), std::string::npos) << e;
  EXPECT_NE(e.find("{2147483648,2147483648,2147483648}"), std::string::npos) << e;
  EXPECT_THROW(Dim(std::vector<long>{1L << 33}), std::invalid_argument);
}

TEST(Sizes, ParametersTooLargeThrowAndLeaveTheCollectionAsItWas) {
  ParameterCollection m;
  // Too many elements to exist at all.
  std::string e = message_of([&] { m.add_parameters({1u << 31, 1u << 31}, "W"); });
  EXPECT_NE(e.find("add_parameters"), std::string::npos) << e;
  EXPECT_NE(e.find("{2147483648,2147483648}"), std::string::npos) << e;
  // A count that fits, but memory no machine has (2^57 bytes): a runtime_error naming the shape.
  EXPECT_THROW(m.add_parameters({1u << 30, 1u << 25}), std::runtime_error);
  e = message_of([&] { m.add_parameters({1u << 30, 1u << 25}, "W"); });
  EXPECT_NE(e.find("cannot allocate"), std::string::npos) << e;
  EXPECT_NE(e.find("'W' of shape {1073741824,33554432}"), std::string::npos) << e;
  e = message_of([&] { m.add_lookup_parameters(1u << 30, {1u << 25}, "E"); });
  EXPECT_NE(e.find("add_lookup_parameters"), std::string::npos) << e;
  EXPECT_NE(e.find("{33554432,1073741824}"), std::string::npos) << e;
  // Nothing was added and no name was used up.
  EXPECT_EQ(m.parameters_list().size(), 0u);
  EXPECT_EQ(m.lookup_parameters_list().size(), 0u);
  EXPECT_EQ(m.add_parameters({2}, "W").get_fullname(), "/W");
  EXPECT_EQ(m.add_parameters({2}).get_fullname(), "/_0");
}

TEST(Sizes, GraphNodesTooLargeThrowAndTheGraphStaysUsable) {
  ComputationGraph cg;
  Expression fine = input(cg, {2}, {1.f, 2.f});
  // A count past 2^60 is refused when the node is made.
  std::string e = message_of([&] { zeros(cg, Dim({1u << 31, 1u << 31, 1u << 31})); });
  EXPECT_NE(e.find("constant"), std::string::npos) << e;
  EXPECT_NE(e.find("{2147483648,2147483648,2147483648}"), std::string::npos) << e;
  EXPECT_THROW(reshape(zeros(cg, Dim({1})), Dim({k2_16, k2_16, k2_16, k2_16})), std::invalid_argument);
  // Counts that fit are checked against memory before the node's value is allocated:
  // 2^58 floats: the count fits, the memory does not.
  Expression unallocatable = zeros(cg, Dim({1u << 30, 1u << 28}));
  EXPECT_THROW(unallocatable.value(), std::runtime_error);
  e = message_of([&] { sum_elems(unallocatable).value(); });
  EXPECT_NE(e.find("out of memory"), std::string::npos) << e;
  EXPECT_NE(e.find("{1073741824,268435456}"), std::string::npos) << e;
  // Everything else still computes, before and after.
  EXPECT_EQ(as_scalar(sum_elems(fine).value()), 3.f);
  Expression later = fine * 2.f;
  EXPECT_EQ(as_vector(later.value()), (std::vector<float>{2.f, 4.f}));
  EXPECT_THROW(unallocatable.value(), std::runtime_error);  // and fails again, cleanly
}

// A lookup table of 65537 rows of 65536: row 65536 starts at element 2^32, where 32-bit offsets
// wrapped to row 0. Values and gradients are 16 GB each of address space, but only the rows written
// are ever committed.
TEST(Sizes, LookupRowsPast4GElements) {
  if (under_sanitizer()) GTEST_SKIP() << "sanitizer allocators commit the whole table";
  ParameterCollection m;
  LookupParameter E;
  try {
    E = m.add_lookup_parameters(k2_16 + 1, {k2_16}, NoInit(), "E");
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no 16 GB of address space here: " << e.what();
  }
  std::vector<float> row(k2_16, 0.f), first(k2_16, 0.f);
  for (unsigned k = 0; k < k2_16; ++k) row[k] = float(k % 7) - 3.f;
  first[5] = 1.f;
  E.initialize(k2_16, row);
  E.initialize(0, first);
  {
    ComputationGraph cg;
    Expression x = lookup(cg, E, k2_16);
    EXPECT_EQ(as_vector(x.value()), row);
    Expression w = input(cg, {k2_16}, std::vector<float>(k2_16, 0.5f));
    Expression loss = dot_product(x, w);
    double expect = 0;
    for (float v : row) expect += 0.5 * v;
    EXPECT_EQ(as_scalar(loss.value()), float(expect));
    cg.backward(loss);
  }
  LookupParameterStorage& s = E.get_storage();
  EXPECT_EQ(s.non_zero_grads.count(k2_16), 1u);
  EXPECT_EQ(s.grads[k2_16].v[0], 0.5f);
  EXPECT_EQ(s.grads[0].v[0], 0.f);  // not the row a 32-bit offset wraps to
  SimpleSGDTrainer sgd(m, 0.1f);
  sgd.clipping_enabled = false;
  sgd.update();
  EXPECT_FLOAT_EQ(s.values[k2_16].v[1], row[1] - 0.05f);
  EXPECT_EQ(s.values[0].v[5], 1.f);
}

// W {65536, 65537} (2^32 + 2^16 values) times a vector, and sum_elems over it: DyNet allocated
// 65536 floats for it and crashed. Reads the whole 16 GB (from never-written, zero pages), so it runs
// only on request: DYNET_TEST_HUGE=1.
TEST(Sizes, ProductAndSumOverMoreThan4GElements) {
  if (!std::getenv("DYNET_TEST_HUGE")) GTEST_SKIP() << "set DYNET_TEST_HUGE=1 to run (reads 16 GB)";
  ParameterCollection m;
  Parameter W;
  try {
    W = m.add_parameters({k2_16, k2_16 + 1}, NoInit(), "W");
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no 16 GB of address space here: " << e.what();
  }
  float* v = W.values()->v;
  const size_t last_col = size_t(k2_16) * k2_16;  // column 65536 starts at element 2^32
  v[last_col + 3] = 2.f;
  v[last_col + k2_16 - 1] = -1.f;
  v[7] = 4.f;
  ComputationGraph cg;
  Expression Wx = parameter(cg, W);
  std::vector<float> xs(k2_16 + 1, 0.f);
  xs[k2_16] = 1.f;  // picks the last column
  Expression y = Wx * input(cg, {k2_16 + 1}, xs);
  const std::vector<float> out = as_vector(y.value());
  ASSERT_EQ(out.size(), k2_16);
  EXPECT_EQ(out[3], 2.f);
  EXPECT_EQ(out[k2_16 - 1], -1.f);
  EXPECT_EQ(out[7], 0.f);
  EXPECT_EQ(as_scalar(sum_elems(Wx).value()), 5.f);
}

}  // namespace
}  // namespace dynet
