// Helpers shared by the op value tests (test_*.cc files include this; it is not a test source).
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/tensor.h"

namespace dynet::test {

// Every element of t within tol of want (and as many elements).
inline void expect_values(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  const std::vector<float> got = as_vector(t);
  ASSERT_EQ(got.size(), want.size()) << "dim " << t.d;
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], tol) << "element " << k;
}

// Runs `f`, expects std::invalid_argument, and returns its message.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

// Runs `f` and returns the message of any std::exception it throws; empty when it throws none.
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace dynet::test
