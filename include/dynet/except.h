// DyNet's exception types and error macros (dynet/except.h). The checks are always on here.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dynet {

// A memory pool could not grow.
class out_of_memory : public std::runtime_error {
 public:
  explicit out_of_memory(const std::string& what_arg) : std::runtime_error(what_arg) {}
};
// Something was asked of a CUDA device that it does not implement (this build has no CUDA).
class cuda_not_implemented : public std::logic_error {
 public:
  explicit cuda_not_implemented(const std::string& what_arg) : std::logic_error(what_arg) {}
};
// An Expression used after its graph was cleared (renew_cg) or destroyed. In Python it is
// dynet.StaleExpressionError, both a ValueError (what the original's Python module raises) and a RuntimeError.
class stale_expression : public std::runtime_error {
 public:
  explicit stale_expression(const std::string& what_arg) : std::runtime_error(what_arg) {}
};
class cuda_exception : public std::runtime_error {
 public:
  explicit cuda_exception(const std::string& what_arg) : std::runtime_error(what_arg) {}
};

}  // namespace dynet

// msg may be a stream expression: DYNET_ARG_CHECK(n > 0, "bad n: " << n)
#define DYNET_DETAIL_THROW(type, msg) \
  do {                                \
    std::ostringstream dynet_oss_;    \
    dynet_oss_ << msg;                \
    throw type(dynet_oss_.str());     \
  } while (0)
// Throws std::invalid_argument unless cond holds.
#define DYNET_ARG_CHECK(cond, msg) \
  do {                             \
    if (!(cond)) DYNET_DETAIL_THROW(std::invalid_argument, msg); \
  } while (0)
#define DYNET_INVALID_ARG(msg) DYNET_DETAIL_THROW(std::invalid_argument, msg)
// Throws std::invalid_argument when cond holds (DyNet's sense of this macro).
#define DYNET_INVALID_ARG_CHECK(cond, msg) \
  do {                                     \
    if (cond) DYNET_DETAIL_THROW(std::invalid_argument, msg); \
  } while (0)
// Throws std::runtime_error unless expr holds.
#define DYNET_ASSERT(expr, msg) \
  do {                          \
    if (!(expr)) DYNET_DETAIL_THROW(std::runtime_error, msg); \
  } while (0)
#define DYNET_RUNTIME_ERR(msg) DYNET_DETAIL_THROW(std::runtime_error, msg)
