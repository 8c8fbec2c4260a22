#include "dynet/init.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <stdexcept>

#include "core/device.h"
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
  bool home = false;  // draws from *rndeng (the home thread on stream 0)
};
thread_local ThreadRng thread_rng;
// The thread whose stream-0 draws go through rndeng: the one that initialized DyNet, else the first to draw.
std::atomic<std::thread::id> home_thread{};
}  // namespace

std::mt19937* rndeng = nullptr;

std::mt19937& random_engine() {
  ThreadRng& t = thread_rng;
  const unsigned gen = rng_generation.load(std::memory_order_relaxed);
  if (t.generation != gen) {
    // A thread's engine depends on the seed and on its stream number only, never on the order in which
    // threads first draw. Stream 0 is the engine seeded with the seed itself, as in a one-thread program.
    const unsigned seed = process_seed();
    std::thread::id none{};
    const std::thread::id self = std::this_thread::get_id();
    home_thread.compare_exchange_strong(none, self);
    t.home = t.stream == 0 && home_thread.load() == self;
    if (t.home) {
      // DyNet's programs replace the engine (`delete rndeng; rndeng = new std::mt19937(seed)`): so it is a
      // heap object, and the home thread reads the pointer at every draw.
      if (rndeng)
        rndeng->seed(seed);
      else
        rndeng = new std::mt19937(seed);
    } else if (t.stream == 0) {
      t.engine.seed(seed);
    } else {
      std::seed_seq seq{seed, t.stream};
      t.engine.seed(seq);
    }
    t.generation = gen;
  }
  if (t.home) {
    if (!rndeng) rndeng = new std::mt19937(process_seed());  // set to null by the program
    return *rndeng;
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

// --dynet-gpu-ids 0,2 or --dynet-devices CPU,GPU:0,GPU:2 into gpu_mask (gpu_mask[i]: GPU i was asked
// for), requested_gpus and cpu_requested; the devices' order is kept in device_list.
void parse_devices(const std::string& flag, const std::string& v, DynetParams& p) {
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int id;
    if (flag == "--dynet-gpu-ids") {
      id = parse_number<int>(flag, item);
      p.ids_requested = true;
    } else if (item == "CPU" || item == "cpu") {
      p.cpu_requested = true;
      p.device_list.push_back("CPU");
      continue;
    } else if (item.rfind("GPU:", 0) == 0 || item.rfind("gpu:", 0) == 0) {
      id = parse_number<int>(flag, item.substr(4));
    } else {
      throw std::invalid_argument("dynet::initialize: " + flag + " takes CPU and GPU:<id> (CPU:<n> is not allowed), got '" +
                                  item + "'");
    }
    if (id < 0 || id > 255) throw std::invalid_argument("dynet::initialize: bad GPU id '" + item + "' in " + flag);
    if (p.gpu_mask.size() <= size_t(id)) p.gpu_mask.resize(id + 1, 0);
    if (p.gpu_mask[id]++) throw std::invalid_argument("dynet::initialize: GPU " + item + " given twice in " + flag);
    p.device_list.push_back("GPU:" + std::to_string(id));
    p.requested_gpus = p.requested_gpus < 0 ? 1 : p.requested_gpus + 1;
  }
  if (flag == "--dynet-devices") p.devices_requested = true;
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
    } else if (name == "--dynet-gpus") {
      p.requested_gpus = parse_number<int>(name, take());
      if (p.requested_gpus < 0) throw std::invalid_argument("dynet::initialize: --dynet-gpus must be >= 0");
      p.ngpus_requested = true;
    } else if (name == "--dynet-gpu-ids" || name == "--dynet-devices") {
      parse_devices(name, take(), p);
    } else {
      throw std::invalid_argument("dynet::initialize: unknown flag " + arg +
                                  " (known: --dynet-seed, --dynet-mem, --dynet-autobatch, --dynet-weight-decay, "
                                  "--dynet-profiling, --dynet-devices, --dynet-gpus)");
    }
  }
  argv[out] = nullptr;
  argc = out;
  if (p.ngpus_requested + p.ids_requested + p.devices_requested > 1)
    throw std::invalid_argument("dynet::initialize: use only one of --dynet-gpus, --dynet-gpu-ids and --dynet-devices");
  return p;
}

void setup_devices(const DynetParams& p) {
  std::vector<int> ids;
  if (!p.device_list.empty()) {
    for (const std::string& d : p.device_list)
      if (d != "CPU") ids.push_back(std::stoi(d.substr(4)));
  } else if (!p.gpu_mask.empty()) {
    for (size_t i = 0; i < p.gpu_mask.size(); ++i)
      if (p.gpu_mask[i]) ids.push_back(static_cast<int>(i));
  } else if (p.requested_gpus > 0 && !gpu_runtime()) {
    // DyNet's CPU builds ignore a GPU count (programs pass --dynet-gpus 1 or requested_gpus = 1 whether
    // or not a GPU is there); GPUs asked for by name still fail below, naming why.
    std::cerr << "[dynet] " << p.requested_gpus << " GPU(s) asked for, but this build of dynet has no CUDA backend; "
              << "running on the CPU\n";
  } else {
    for (int i = 0; i < p.requested_gpus; ++i) ids.push_back(i);
  }
  Device* first = nullptr;
  for (int id : ids) {
    Device* d = gpu_device(id);
    if (!first) first = d;
  }
  default_device = first ? first : cpu_device();
}

void initialize(DynetParams& params) {
  if (!params.mem_descriptor.empty()) parse_mem(params.mem_descriptor);
  autobatch_flag = params.autobatch;
  profiling_flag = params.profiling;
  default_weight_decay_lambda = params.weight_decay;
  home_thread = std::this_thread::get_id();  // its draws go through rndeng from now on
  reset_rng(params.random_seed);
  setup_devices(params);
  std::cerr << "[dynet] random seed: " << global_seed.load() << "\n";
}

void initialize(int& argc, char**& argv, bool shared_parameters) {
  DynetParams p = extract_dynet_params(argc, argv, shared_parameters);
  initialize(p);
}

void cleanup() { free_spare_executors(); }

}  // namespace dynet

// ---- devices ----
namespace dynet {

void show_pool_mem_info() {
  const PoolSizes& s = pool_sizes();
  std::cerr << "\nMemory pool info for each device (initial sizes; pools grow on demand):\n";
  for (Device* d : available_devices())
    std::cerr << " Device " << d->name << " - FOR Memory " << (s.fx >> 20) << "MB, BACK Memory " << (s.dEdf >> 20)
              << "MB, PARAM Memory " << (s.ps >> 20) << "MB, SCRATCH Memory " << (s.scratch >> 20) << "MB.\n";
}

}  // namespace dynet
