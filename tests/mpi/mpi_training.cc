// Run under mpirun by tests/mpi/run.sh (see tests/CMakeLists.txt). Modes:
//   train     several trainers; after every run the parameters must be bitwise identical on every rank
//             and, on rank 0, equal (within float tolerance) to one process trained on the whole
//             minibatches (on the CPU); ranks whose models differ must all throw, none hang. Two of the
//             runs keep the distributed model on a device (GPU 0 when there is one, else the emulated
//             device), whose gradients the reducer reads through managed memory. Exit 0 only if all hold.
//   throw     rank 1 throws before its third update and main returns 1 (no MPI_Finalize): mpirun must
//             end the job with rank 1's message while rank 0 waits in the all-reduce.
//   uncaught  the same, but the exception leaves main (std::terminate).
//   abort     rank 1 calls dynet::mpi::abort from its handler.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/mpi.h"
#include "dynet/training.h"
#include "core/device.h"
#include "kernels/device/emulated.h"

using namespace dynet;

namespace {

constexpr unsigned kVocab = 40, kEmbed = 6, kHidden = 10, kClasses = 4;

struct Example {
  std::vector<unsigned> words;
  unsigned label;
};

// The same global minibatches on every rank (a fixed LCG), of varying sizes: 1 leaves rank 1 without
// examples; words < 4 ("rare") reach a parameter only some shards use.
std::vector<std::vector<Example>> make_minibatches() {
  uint64_t state = 12345;
  auto next = [&state](unsigned n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned>((state >> 33) % n);
  };
  std::vector<std::vector<Example>> out;
  for (unsigned size : {6u, 5u, 1u, 7u, 4u, 6u, 3u, 8u}) {
    std::vector<Example> mb;
    for (unsigned k = 0; k < size; ++k) {
      Example ex;
      const unsigned len = 1 + next(4);
      for (unsigned i = 0; i < len; ++i) ex.words.push_back(next(kVocab));
      ex.label = next(kClasses);
      mb.push_back(ex);
    }
    out.push_back(mb);
  }
  return out;
}

struct Model {
  LookupParameter embed;
  Parameter w1, b1, w2, b2, rare;
  explicit Model(ParameterCollection& pc, Device* device = nullptr)
      : embed(pc.add_lookup_parameters(kVocab, {kEmbed}, "", device)),
        w1(pc.add_parameters({kHidden, kEmbed}, "", device)),
        b1(pc.add_parameters({kHidden}, "", device)),
        w2(pc.add_parameters({kClasses, kHidden}, "", device)),
        b2(pc.add_parameters({kClasses}, "", device)),
        rare(pc.add_parameters({kHidden}, "", device)),
        device(device) {}
  Device* device;

  Expression loss(ComputationGraph& cg, const Example& ex) const {
    std::vector<Expression> xs;
    for (unsigned w : ex.words) xs.push_back(lookup(cg, embed, w));
    Expression h = tanh(parameter(cg, w1) * average(xs) + parameter(cg, b1));
    if (ex.words[0] < 4) h = h + parameter(cg, rare);
    Expression loss = pickneglogsoftmax(parameter(cg, w2) * h + parameter(cg, b2), ex.label);
    return device ? to_device(loss, cpu_device()) : loss;
  }
};

// Device parameters are in managed memory: the host reads and writes them once the device is idle.
void synchronize(const ParameterCollection& pc) {
  for (const auto& p : pc.get_storage().params)
    if (p->values.device) p->values.device->synchronize();
  for (const auto& p : pc.get_storage().lookup_params)
    if (p->all_values.device) p->all_values.device->synchronize();
}

std::vector<float> all_values(const ParameterCollection& pc) {
  synchronize(pc);
  std::vector<float> v;
  for (const auto& p : pc.get_storage().params) v.insert(v.end(), p->values.v, p->values.v + p->dim.size());
  for (const auto& p : pc.get_storage().lookup_params)
    v.insert(v.end(), p->all_values.v, p->all_values.v + p->all_dim.size());
  return v;
}

void set_values(ParameterCollection& pc, const std::vector<float>& v) {
  synchronize(pc);
  size_t at = 0;
  for (const auto& p : pc.get_storage().params) {
    std::memcpy(p->values.v, v.data() + at, p->dim.size() * sizeof(float));
    at += p->dim.size();
  }
  for (const auto& p : pc.get_storage().lookup_params) {
    std::memcpy(p->all_values.v, v.data() + at, p->all_dim.size() * sizeof(float));
    at += p->all_dim.size();
  }
}

struct Config {
  std::string name;
  std::function<std::unique_ptr<Trainer>(ParameterCollection&)> make;
  mpi::Reduction reduction = mpi::Reduction::Sum;
  bool on_device = false;  // the distributed model's parameters on test_device(); the reference stays on the CPU
};

Device* test_device() { return gpu_count() > 0 ? gpu_device(0) : emulated_device(); }

// Loss of examples [first, last) of mb: their sum, or their mean over the whole minibatch.
Expression shard_loss(ComputationGraph& cg, const Model& m, const std::vector<Example>& mb, size_t first, size_t last,
                      double divide_by) {
  std::vector<Expression> losses;
  for (size_t k = first; k < last; ++k) losses.push_back(m.loss(cg, mb[k]));
  Expression total = sum(losses);
  return divide_by == 1 ? total : total * static_cast<float>(1.0 / divide_by);
}

int failures = 0;
void expect(bool ok, int rank, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  }
}

void run_config(const Config& c, const std::vector<std::vector<Example>>& minibatches, int rank, int size) {
  reset_rng(100 + rank);  // different initial values on every rank: the broadcast must fix them
  ParameterCollection pc;
  Model model(pc, c.on_device ? test_device() : nullptr);
  std::unique_ptr<Trainer> trainer = c.make(pc);
  mpi::DistributedTrainer dist(*trainer, c.reduction);
  const std::vector<float> initial = all_values(pc);
  double loss_total = 0;
  for (const auto& mb : minibatches) {
    // Mean: every rank averages its own shard (the minibatches with size % ranks == 0 are used).
    if (c.reduction == mpi::Reduction::Mean && mb.size() % size != 0) continue;
    auto [first, last] = dist.shard(mb.size());
    ComputationGraph cg;
    double local = 0;
    if (first < last) {
      Expression loss = shard_loss(cg, model, mb, first, last, c.reduction == mpi::Reduction::Mean ? last - first : 1);
      local = as_scalar(cg.forward(loss));
      cg.backward(loss);
    }
    dist.update();
    loss_total += dist.sum(local);
  }

  // Bitwise identical on every rank.
  const std::vector<float> mine = all_values(pc);
  std::vector<float> every(rank == 0 ? mine.size() * size : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, every.data(), static_cast<int>(mine.size()),
             MPI_FLOAT, 0, MPI_COMM_WORLD);
  double clips[2] = {trainer->clips, trainer->updates}, clips0[2] = {clips[0], clips[1]};
  MPI_Bcast(clips0, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  expect(clips[0] == clips0[0] && clips[1] == clips0[1], rank, c.name + ": clip/update counters differ from rank 0's");
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      expect(std::memcmp(every.data() + r * mine.size(), mine.data(), mine.size() * sizeof(float)) == 0, rank,
             c.name + ": rank " + std::to_string(r) + "'s parameters are not bitwise equal to rank 0's");

    // One process on the whole minibatches, from the same (broadcast) initial values.
    ParameterCollection ref_pc;
    Model ref_model(ref_pc);
    set_values(ref_pc, initial);
    std::unique_ptr<Trainer> ref = c.make(ref_pc);
    double ref_loss = 0;
    for (const auto& mb : minibatches) {
      if (c.reduction == mpi::Reduction::Mean && mb.size() % size != 0) continue;
      ComputationGraph cg;
      Expression loss = shard_loss(cg, ref_model, mb, 0, mb.size(), c.reduction == mpi::Reduction::Mean ? mb.size() : 1);
      ref_loss += as_scalar(cg.forward(loss)) * (c.reduction == mpi::Reduction::Mean ? size : 1);
      cg.backward(loss);
      ref->update();
    }
    const std::vector<float> expected = all_values(ref_pc);
    double worst = 0, moved = 0;
    for (size_t k = 0; k < expected.size(); ++k) {
      worst = std::max(worst, std::abs(double(mine[k]) - expected[k]) / (1e-3 + std::abs(double(expected[k]))));
      moved = std::max(moved, std::abs(double(expected[k]) - initial[k]));
    }
    expect(worst < 1e-4, rank, c.name + ": differs from one process on the whole minibatches by " + std::to_string(worst));
    expect(moved > 1e-3, rank, c.name + ": training did not move the parameters");
    expect(std::abs(loss_total - ref_loss) <= 1e-4 * std::abs(ref_loss), rank,
           c.name + ": summed loss " + std::to_string(loss_total) + " vs one process " + std::to_string(ref_loss));
    if (c.name == "sgd-clipped") expect(trainer->clips > 0, rank, c.name + ": clipping never triggered");
    const mpi::ReduceStats& st = dist.stats();
    std::printf("%-16s ok=%d  max rel diff vs one process %.2e  clips %.0f  reduce %.1f us/update (%llu dense floats, %llu rows sent)\n",
                c.name.c_str(), failures == 0, worst, trainer->clips, 1e6 * st.seconds / std::max(1ull, st.updates),
                st.dense_floats / std::max(1ull, st.updates), st.sparse_rows);
  }
}

// Ranks with different models or trainers all throw; none waits for the others.
void run_mismatches(int rank) {
  {
    ParameterCollection pc;
    Model model(pc);
    if (rank == 1) pc.add_parameters({3});
    SimpleSGDTrainer sgd(pc);
    bool threw = false;
    try {
      mpi::DistributedTrainer dist(sgd);
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()).find("differ") != std::string::npos;
    }
    expect(threw, rank, "a rank with an extra parameter: the constructor did not throw on every rank");
  }
  {
    ParameterCollection pc;
    Model model(pc);
    SimpleSGDTrainer sgd(pc);
    mpi::DistributedTrainer dist(sgd);
    if (rank == 1) model.rare.set_updated(false);
    bool threw = false;
    try {
      dist.update();
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()).find("differ") != std::string::npos;
    }
    expect(threw, rank, "a rank with a frozen parameter: update() did not throw on every rank");
    model.rare.set_updated(true);
    dist.update();  // agreeing again, the ranks go on
  }
}

int train(int rank, int size) {
  const auto minibatches = make_minibatches();
  std::vector<Config> configs = {
      {"sgd-clipped",
       [](ParameterCollection& pc) {
         auto t = std::make_unique<SimpleSGDTrainer>(pc, 0.2f);
         t->clip_threshold = 0.5f;
         return std::unique_ptr<Trainer>(std::move(t));
       }},
      {"adam-sparse", [](ParameterCollection& pc) { return std::unique_ptr<Trainer>(new AdamTrainer(pc, 0.01f)); }},
      {"adam-dense-rows",
       [](ParameterCollection& pc) {
         auto t = std::make_unique<AdamTrainer>(pc, 0.01f);
         t->set_sparse_updates(false);
         return std::unique_ptr<Trainer>(std::move(t));
       }},
      {"momentum", [](ParameterCollection& pc) { return std::unique_ptr<Trainer>(new MomentumSGDTrainer(pc, 0.05f)); }},
      {"sgd-mean", [](ParameterCollection& pc) { return std::unique_ptr<Trainer>(new SimpleSGDTrainer(pc, 0.2f)); },
       mpi::Reduction::Mean},
  };
  for (size_t k : {1u, 3u}) {  // Adam with sparse lookup updates and momentum, on the device
    Config c = configs[k];
    c.name += "-device";
    c.on_device = true;
    configs.push_back(c);
  }
  for (const Config& c : configs) run_config(c, minibatches, rank, size);
  run_mismatches(rank);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failure(s) over %d ranks\n", all == 0 ? "PASS" : "FAIL", all, size);
  return all == 0 ? 0 : 1;
}

// Rank 1 fails before its third update while rank 0 goes on into the all-reduce.
void train_until_rank1_fails(int rank) {
  const auto minibatches = make_minibatches();
  ParameterCollection pc;
  Model model(pc);
  SimpleSGDTrainer sgd(pc);
  mpi::DistributedTrainer dist(sgd);
  for (size_t step = 0; step < minibatches.size(); ++step) {
    const auto& mb = minibatches[step];
    auto [first, last] = dist.shard(mb.size());
    ComputationGraph cg;
    if (rank == 1 && step == 2) throw std::runtime_error("rank 1 fails on purpose at step 2");
    if (first < last) {
      Expression loss = shard_loss(cg, model, mb, first, last, 1);
      cg.forward(loss);
      cg.backward(loss);
    }
    dist.update();
  }
}

}  // namespace

int main(int argc, char** argv) {
  dynet::initialize(argc, argv);
  mpi::initialize(&argc, &argv);
  const int rank = mpi::rank(), size = mpi::size();
  const std::string mode = argc > 1 ? argv[1] : "train";
  if (mode == "train") {
    if (size < 2) {
      std::fprintf(stderr, "mpi_training: run under mpirun with at least 2 ranks\n");
      return 1;
    }
    return train(rank, size);
  }
  if (mode == "uncaught") train_until_rank1_fails(rank);
  try {
    train_until_rank1_fails(rank);
  } catch (const std::exception& e) {
    if (mode == "abort") mpi::abort(e.what());
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
  std::fprintf(stderr, "rank %d: the job was not stopped\n", rank);
  return 0;
}
