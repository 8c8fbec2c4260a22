// Writes a benchmark data directory with the layout and statistics of ../shared/data (see
// generate_dataset), for machines without the real data.
//   build/bench/bench_gendata --out DIR [--scale S] [--seed N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "common.h"

int main(int argc, char** argv) {
  try {
    std::string out;
    double scale = 1.0;
    unsigned long seed = 1;
    for (int i = 1; i < argc; ++i) {
      if (i + 1 >= argc) throw std::invalid_argument(std::string("unknown or incomplete argument '") + argv[i] + "'");
      const char* value = argv[i + 1];
      char* end = nullptr;
      if (!std::strcmp(argv[i], "--out")) {
        out = value;
      } else if (!std::strcmp(argv[i], "--scale")) {
        scale = std::strtod(value, &end);
        if (end == value || *end || !(scale > 0)) throw std::invalid_argument(std::string("bad --scale '") + value + "'");
      } else if (!std::strcmp(argv[i], "--seed")) {
        seed = std::strtoul(value, &end, 10);
        if (end == value || *end) throw std::invalid_argument(std::string("bad --seed '") + value + "'");
      } else {
        throw std::invalid_argument(std::string("unknown argument '") + argv[i] + "'");
      }
      ++i;
    }
    if (out.empty()) throw std::invalid_argument("--out DIR is required");
    bench::generate_dataset(out, scale, seed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gendata: %s\n", e.what());
    return 1;
  }
  return 0;
}
