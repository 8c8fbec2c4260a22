#include "dynet/init.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "core/executor.h"
#include "dynet/devices.h"
#include "dynet/globals.h"

namespace dynet {

Device* default_device = cpu_device();
int autobatch_flag = 0;
int profiling_flag = 0;
float default_weight_decay_lambda = 0.f;

namespace {
std::atomic<unsigned> global_seed{0};
std::atomic<unsigned> rng_generation{0};  // bumped by reset_rng so every thread reseeds
PoolSizes g_pool_sizes;

unsigned fresh_seed() {
  std::random_device rd;
  return rd();
}

// The seed every thread derives its engine from: the one given, or one drawn once for the process (by
// whichever thread asks first; the others then use the same).
unsigned process_seed() {
  unsigned seed = global_seed.load();
  if (seed != 0) return seed;
  unsigned drawn = fresh_seed();
  while (drawn == 0) drawn = fresh_seed();
  return global_seed.compare_exchange_strong(seed, drawn) ? drawn : seed;
}

struct ThreadRng {
  std::mt19937 engine;
  unsigned stream = 0;
  unsigned generation = ~0u;
};
thread_local ThreadRng thread_rng;
}  // namespace

thread_local std::mt19937* rndeng = nullptr;

std::mt19937& random_engine() {
  ThreadRng& t = thread_rng;
  const unsigned gen = rng_generation.load(std::memory_order_relaxed);
  if (t.generation != gen) {
    // A thread's engine depends on the seed and on its stream number only, never on the order in which
    // threads first draw. Stream 0 is the engine seeded with the seed itself, as in a one-thread program.
    const unsigned seed = process_seed();
    if (t.stream == 0) {
      t.engine.seed(seed);
    } else {
      std::seed_seq seq{seed, t.stream};
      t.engine.seed(seq);
    }
    t.generation = gen;
    rndeng = &t.engine;
  }
  return t.engine;
}

void reset_rng(unsigned seed) {
  global_seed = seed == 0 ? fresh_seed() : seed;
  ++rng_generation;
  random_engine();
}

void set_random_stream(unsigned stream) {
  ThreadRng& t = thread_rng;
  t.stream = stream;
  t.generation = ~0u;
  random_engine();
}

const PoolSizes& pool_sizes() { return g_pool_sizes; }

namespace {
std::string normalise(std::string s) {
  for (char& c : s)
    if (c == '_') c = '-';
  return s;
}

template <class T>
T parse_number(const std::string& flag, const std::string& v) {
  std::istringstream is(v);
  T x;
  if (!(is >> x) || !is.eof())
    throw std::invalid_argument("dynet::initialize: bad value '" + v + "' for " + flag);
  return x;
}

// --dynet-mem's megabytes: one figure for all four pools, or one each.
std::vector<size_t> mem_megabytes(const std::string& desc) {
  std::vector<size_t> mb;
  std::stringstream ss(desc);
  std::string part;
  while (std::getline(ss, part, ',')) mb.push_back(parse_number<size_t>("--dynet-mem", part));
  if (mb.size() != 1 && mb.size() != 4)
    throw std::invalid_argument("dynet::initialize: --dynet-mem takes N or F,B,P,S (MB), got '" + desc + "'");
  return mb;
}

void parse_mem(const std::string& desc) {
  const std::vector<size_t> mb = mem_megabytes(desc);
  if (mb.size() == 1) {
    size_t each = (mb[0] << 20) / 4;
    g_pool_sizes = {each, each, each, each};
  } else {
    g_pool_sizes = {mb[0] << 20, mb[1] << 20, mb[2] << 20, mb[3] << 20};
  }
}
}  // namespace

DeviceMempoolSizes::DeviceMempoolSizes(const std::string& desc) {
  const std::vector<size_t> mb = mem_megabytes(desc);
  for (int i = 0; i < 4; ++i) used[i] = mb.size() == 1 ? mb[0] / 4 : mb[i];
}

DynetParams extract_dynet_params(int& argc, char**& argv, bool shared_parameters) {
  DynetParams p;
  p.shared_parameters = shared_parameters;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--dynet", 0) != 0 && arg.rfind("--dynet_", 0) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    std::string name = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    name = normalise(name);
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw std::invalid_argument("dynet::initialize: " + name + " needs a value");
      return argv[++i];
    };
    if (name == "--dynet-seed") {
      p.random_seed = parse_number<unsigned>(name, take());
    } else if (name == "--dynet-mem") {
      p.mem_descriptor = take();
    } else if (name == "--dynet-autobatch") {
      p.autobatch = parse_number<int>(name, take());
    } else if (name == "--dynet-weight-decay") {
      const std::string v = take();
      p.weight_decay = parse_number<float>(name, v);
      if (!(p.weight_decay >= 0 && p.weight_decay < 1))
        throw std::invalid_argument("dynet::initialize: --dynet-weight-decay must be in [0, 1), got " + v);
    } else if (name == "--dynet-profiling") {
      p.profiling = parse_number<int>(name, take());
    } else if (name == "--dynet-gpus" || name == "--dynet-devices" || name == "--dynet-gpu-ids") {
      take();  // accepted for compatibility; this build runs on the CPU
      p.cpu_requested = true;
    } else {
      throw std::invalid_argument("dynet::initialize: unknown flag " + arg +
                                  " (known: --dynet-seed, --dynet-mem, --dynet-autobatch, --dynet-weight-decay, "
                                  "--dynet-profiling, --dynet-devices, --dynet-gpus)");
    }
  }
  argv[out] = nullptr;
  argc = out;
  return p;
}

void initialize(DynetParams& params) {
  if (!params.mem_descriptor.empty()) parse_mem(params.mem_descriptor);
  autobatch_flag = params.autobatch;
  profiling_flag = params.profiling;
  default_weight_decay_lambda = params.weight_decay;
  reset_rng(params.random_seed);
  std::cerr << "[dynet] random seed: " << global_seed.load() << "\n";
}

void initialize(int& argc, char**& argv, bool shared_parameters) {
  DynetParams p = extract_dynet_params(argc, argv, shared_parameters);
  initialize(p);
}

void cleanup() { free_spare_executors(); }

}  // namespace dynet

// ---- devices ----
#include <unsupported/Eigen/CXX11/Tensor>

#include "core/executor.h"
#include "dynet/devices.h"

namespace dynet {

Device_CPU* cpu_device() {
  static Eigen::DefaultDevice eigen_cpu;
  static Device_CPU cpu(0, &eigen_cpu);
  return &cpu;
}

Device* get_device_manager_device(const std::string& name) {
  if (name == "CPU" || name == "cpu") return cpu_device();
  throw std::invalid_argument("get_device: unknown device '" + name + "' (this build has: CPU)");
}

std::vector<Device*> available_devices() { return {cpu_device()}; }

Device* DeviceManager::get(size_t i) const {
  const std::vector<Device*> all = available_devices();
  if (i >= all.size())
    throw std::out_of_range("DeviceManager::get: device " + std::to_string(i) + " of " + std::to_string(all.size()));
  return all[i];
}

DeviceManager* get_device_manager() {
  static DeviceManager manager;
  return &manager;
}

void show_pool_mem_info() {
  const PoolSizes& s = pool_sizes();
  std::cerr << "\nMemory pool info for each device (initial sizes; pools grow on demand):\n"
            << " Device CPU - FOR Memory " << (s.fx >> 20) << "MB, BACK Memory " << (s.dEdf >> 20)
            << "MB, PARAM Memory " << (s.ps >> 20) << "MB, SCRATCH Memory " << (s.scratch >> 20) << "MB.\n";
}

}  // namespace dynet
