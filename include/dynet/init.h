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
  bool devices_requested = false;        // --dynet-devices was given
  int requested_gpus = -1;               // --dynet-gpus N: GPUs 0..N-1 (CUDA builds)
  std::vector<int> gpu_mask;             // gpu_mask[i] != 0: GPU i was asked for (--dynet-gpu-ids, --dynet-devices)
  std::vector<std::string> device_list;  // --dynet-devices in its order ("CPU", "GPU:0", ...)
};

// Parses and removes the --dynet-* flags from argv ("--opt v" or "--opt=v", dashes or underscores).
// Unknown --dynet-* flags and malformed values throw std::invalid_argument.
DynetParams extract_dynet_params(int& argc, char**& argv, bool shared_parameters = false);
void initialize(DynetParams& params);
// initialize()'s device part: sets up the GPUs params asks for (throws naming why one is missing); the
// first becomes default_device, else the CPU. (The Python module initialises with it, without the banner.)
void setup_devices(const DynetParams& params);
void initialize(int& argc, char**& argv, bool shared_parameters = false);
void cleanup();
// Random numbers come from a per-thread engine (random_engine(), dynet/globals.h) that depends only on
// the process's seed (--dynet-seed, or reset_rng) and the thread's stream number, so a thread draws the
// same numbers whichever thread runs first and whatever the kernels' thread count. The thread that called
// initialize draws through dynet::rndeng on stream 0, so a program may replace that engine as in DyNet.
// Sets the seed and restarts every thread's engine (each at its next draw) from the start of its stream.
void reset_rng(unsigned seed);
// Restarts the calling thread's engine at the start of stream `stream`. Every thread is on stream 0
// until it calls this, so threads that never call it draw the same sequence (as DyNet's forked mp.h
// workers did); workers that should draw independent numbers (dropout on different examples) each
// take their own number, e.g. their worker index + 1.
void set_random_stream(unsigned stream);
// Initial size in bytes of each per-graph pool (forward, backward, scratch) and the parameter pool.
struct PoolSizes {
  size_t fx = 1 << 20, dEdf = 1 << 20, ps = 1 << 20, scratch = 1 << 20;
};
const PoolSizes& pool_sizes();

}  // namespace dynet
