// Library initialisation from --dynet-* command-line flags.
#pragma once

#include <string>
#include <vector>

namespace dynet {

struct DynetParams {
  unsigned random_seed = 0;         // 0: seed from std::random_device
  std::string mem_descriptor = "";  // --dynet-mem: initial pool sizes in MB ("N" or "F,B,P,S"); empty: small, grows
  float weight_decay = 0.f;
  int autobatch = 0;
  int profiling = 0;
  bool shared_parameters = false;
  bool ngpus_requested = false;
  bool ids_requested = false;
  bool cpu_requested = false;
  int requested_gpus = -1;
  std::vector<int> gpu_mask;
};

// Parses and removes the --dynet-* flags from argv ("--opt v" or "--opt=v", dashes or underscores).
// Unknown --dynet-* flags and malformed values throw std::invalid_argument.
DynetParams extract_dynet_params(int& argc, char**& argv, bool shared_parameters = false);
void initialize(DynetParams& params);
void initialize(int& argc, char**& argv, bool shared_parameters = false);
void cleanup();
// Reseeds the calling thread's engine (and the seed later threads derive theirs from).
void reset_rng(unsigned seed);
// Initial size in bytes of each per-graph pool (forward, backward, scratch) and the parameter pool.
struct PoolSizes {
  size_t fx = 1 << 20, dEdf = 1 << 20, ps = 1 << 20, scratch = 1 << 20;
};
const PoolSizes& pool_sizes();

}  // namespace dynet
