// Shared pieces of the benchmark task programs (bench/tasks/*.cc): command-line options, the data
// readers (the formats of ../shared/data), vocabularies, the deterministic example order that every
// implementation (C++, PyTorch, DyNet) reproduces, peak RSS, the one-line JSON result, the timed
// training loop and main() itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "dynet/devices.h"
#include "dynet/expr.h"
#include "dynet/mp.h"
#include "dynet/mpi.h"
#include "dynet/training.h"

namespace bench {

struct Options {
  std::string data_dir;  // holds ptb/, tagging/, sst/, ud-ewt/ (real or written by bench_gendata)
  int steps = 20;        // measured training steps (minibatches or examples)
  int warmup = 3;        // steps run before the clock starts
  unsigned minibatch = 1;
  unsigned seed = 1;
  int threads = 1;
  // Data parallelism (bench/parallel drives these): every update covers update_batch consecutive
  // examples (their losses summed in one graph); with mpi, each MPI rank builds its shard of them and
  // the gradients are all-reduced (dynet::mpi::DistributedTrainer).
  // update_batch > 1 without mpi is the autobatch paper's "bulk" setting: several examples per graph.
  unsigned update_batch = 1;
  bool mpi = false;
  // workers > 1: the timed steps run on that many threads over the shared model, each updating after
  // its own example (asynchronously, dynet/mp.h); the task's loss code must then be safe to call from
  // several threads at once.
  unsigned workers = 1;
  bool own_trainers = false;  // with workers: one Adam per worker (concurrent updates) instead of one shared
  bool exclusive_updates = false;  // with workers: dynet::mp::asynchronous_updates = false
  // The last `dev` examples (of the shuffled list) are held out of training; after the timed steps
  // their loss is computed (forward only) and reported as dev_loss.
  unsigned dev = 0;
  int autobatch = 0;    // DyNet's --dynet-autobatch: 0 off, 1 agenda-based, 2 depth-based
  bool manual = false;  // the hand-batched version of the task (lookup/pick with index vectors)
  int profiling = 0;    // DyNet's --dynet-profiling (a per-op time table at exit; 2: batch composition)
  // "gpu": the model and every graph on GPU 0 (--dynet-gpus 1); initialize() refuses with the reason when
  // this build has no CUDA backend or the machine no usable GPU. "emu": on the emulated device, which counts
  // the work a GPU would be given (slowly: its kernels are generic host code).
  std::string device = "cpu";
};

// Parses --data DIR --steps N --warmup N --minibatch N --seed N --threads N --update-batch N --mpi 0|1
// --workers N --own-trainers 0|1 --exclusive-updates 0|1 --dev N --autobatch N --manual 0|1 --profiling N;
// anything else throws std::invalid_argument naming the program and the
// argument. needs_data: --data is required.
Options parse_options(const char* program, int argc, char** argv, bool needs_data = true);

// Initialises the library with the options' seed and autobatching strategy and sets the thread count of
// the GEMM runtime.
void initialize_library(const Options& options);

// For tasks without a hand-batched version: throws std::invalid_argument naming the program if --manual 1.
void reject_manual(const Options& options, const char* program);

// "generated" when dir was written by bench_gendata (it leaves a GENERATED marker), else "real".
std::string data_kind(const std::string& dir);
double peak_rss_mb();

// SplitMix64: the example order generator; bench/py/benchdata.py implements the same sequence.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();

 private:
  uint64_t state_;
};

// Fisher-Yates from the back, j = next() % (i + 1): the same permutation in every implementation.
template <typename T>
void deterministic_shuffle(std::vector<T>& items, uint64_t seed) {
  SplitMix64 rng(seed);
  for (size_t i = items.size(); i-- > 1;) {
    size_t j = static_cast<size_t>(rng.next() % (i + 1));
    std::swap(items[i], items[j]);
  }
}

// Word <-> id. `freeze` makes unknown words map to `unk_id` instead of growing the vocabulary.
class Vocab {
 public:
  unsigned add(const std::string& word);
  // The id of word, or unk (which must have been added) when it is absent.
  unsigned get(const std::string& word, unsigned unk) const;
  bool contains(const std::string& word) const { return ids_.count(word) > 0; }
  unsigned size() const { return static_cast<unsigned>(words_.size()); }

 private:
  std::unordered_map<std::string, unsigned> ids_;
  std::vector<std::string> words_;
};

// ---- data files (formats in ../shared/data/README.md) ----
// Whitespace-separated tokens per non-empty line (ptb/*.txt).
std::vector<std::vector<std::string>> read_token_lines(const std::string& path);

struct TaggedSentence {
  std::vector<std::string> words, tags;
};
// `word|TAG` tokens, split at the last '|' (tagging/*.txt).
std::vector<TaggedSentence> read_tagged(const std::string& path);

// A binary tree in post-order: children precede their parent; the root is the last node.
struct TreeNode {
  int label = 0;
  int left = -1, right = -1;  // indices of children (internal nodes)
  std::string word;           // leaves
  bool is_leaf() const { return left < 0; }
};
using Tree = std::vector<TreeNode>;
// One PTB bracketed tree per line, `(label child child)` / `(label word)`; tokens split on ASCII
// space and parentheses only (SST has words with a no-break space inside).
std::vector<Tree> read_trees(const std::string& path);

struct DepSentence {
  std::vector<std::string> words, tags, labels;  // UPOS tags; base relation (before ':')
  std::vector<int> heads;                        // 0 = root; words are numbered from 1
};
// CoNLL-U; multiword-token ranges and empty nodes are skipped.
std::vector<DepSentence> read_conllu(const std::string& path);

// Writes a data directory with the layout and statistics of ../shared/data (PTB vocabulary and
// sentence lengths, WikiNER tag distribution, SST binary trees, projective UD-like trees); `scale`
// multiplies the number of sentences of each file.
void generate_dataset(const std::string& dir, double scale, uint64_t seed);

// Prints the result as one JSON line (the runner reads the line that starts with {"task").
struct Result {
  std::string task, unit, loss_unit, data;
  unsigned minibatch = 1;
  int steps = 0, warmup = 0, threads = 1;
  double units = 0, seconds = 0, loss_sum = 0, loss_count = 0;
  // Data-parallel runs: examples per update, ranks, worker threads, and the seconds the timed steps
  // spent in the gradient all-reduce (rank 0's), of which waiting for the slowest rank.
  unsigned update_batch = 1, workers = 1;
  bool own_trainers = false, exclusive_updates = false;
  int ranks = 1;
  double reduce_seconds = 0, reduce_wait_seconds = 0;
  double update_seconds = 0;  // in trainer.update() during the timed steps (the all-reduce included)
  int dev_examples = 0;                        // held out (--dev)
  double dev_loss_sum = 0, dev_loss_count = 0;  // their loss after training
  int autobatch = 0;
  bool manual = false;
  double minor_faults = 0;  // minor page faults during the timed steps (getrusage)
  double cpu_seconds = 0;   // CPU time of the timed steps: on a busy machine, less noisy than `seconds`
  dynet::DeviceCounters device_work;  // queued on the devices other than the CPU during the timed steps
  double nodes = 0;                   // in the timed steps' graphs
};
void print_result(const Result& result);

// What one training step reports: the summed loss, the number of loss terms it sums (words,
// transitions, sentences) and the number of throughput units it processed.
struct StepOutcome {
  double loss = 0, loss_terms = 0, units = 0;
  double nodes = 0;  // in the step's graph (filled in by the training loops below)
  StepOutcome& operator+=(const StepOutcome& o) {
    loss += o.loss;
    loss_terms += o.loss_terms;
    units += o.units;
    nodes += o.nodes;
    return *this;
  }
};

// Minor page faults and CPU seconds (user + system, all threads) of the process so far (getrusage).
double minor_faults();
double cpu_seconds();
// The counters of the devices other than the CPU, summed.
dynet::DeviceCounters device_counters();

// Runs options.warmup untimed steps, then options.steps timed ones; step(k) trains on example k.
template <typename StepFn>
Result train_and_time(const Options& options, StepFn&& step) {
  for (int k = 0; k < options.warmup; ++k) step(k);
  Result r;
  r.steps = options.steps;
  r.warmup = options.warmup;
  r.minibatch = options.minibatch;
  r.threads = options.threads;
  r.data = data_kind(options.data_dir);
  r.autobatch = options.autobatch;
  r.manual = options.manual;
  const double faults_before = minor_faults(), cpu_before = cpu_seconds();
  const dynet::DeviceCounters work_before = device_counters();
  auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < options.steps; ++k) {
    StepOutcome out = step(options.warmup + k);
    r.loss_sum += out.loss;
    r.loss_count += out.loss_terms;
    r.units += out.units;
    r.nodes += out.nodes;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.minor_faults = minor_faults() - faults_before;
  r.cpu_seconds = cpu_seconds() - cpu_before;
  r.device_work = device_counters() - work_before;
  return r;
}

// The timed steps of train_groups_with_adam on options.workers threads
// (dynet::mp::run_mp_minibatch_trainer): step k trains on examples[k % size] alone and its worker
// updates right after it, with the shared trainer (updates take turns) or, with own_trainers, its own
// Adam (updates run concurrently); asynchronously unless exclusive_updates. Warm-up runs on one thread.
template <typename Example, typename GroupLossFn, typename OutcomeFn>
Result train_on_workers(const Options& options, dynet::Trainer& trainer, const std::vector<Example>& examples,
                        GroupLossFn& group_loss, OutcomeFn& outcome_of) {
  struct Learner : dynet::mp::ILearner<size_t, StepOutcome> {
    const std::vector<Example>* examples;
    size_t train_size;
    GroupLossFn* group_loss;
    OutcomeFn* outcome_of;
    StepOutcome LearnFromDatum(const size_t& k, bool learn) override {
      const std::vector<const Example*> group{&(*examples)[k % train_size]};
      dynet::ComputationGraph cg;
      dynet::Expression loss = (*group_loss)(cg, group);
      StepOutcome out = (*outcome_of)(*group[0]);
      out.nodes = cg.size();
      out.loss = dynet::as_scalar(cg.forward(loss));
      if (learn) cg.backward(loss);
      return out;
    }
    void SaveModel() override {}
  } learner;
  learner.examples = &examples;
  learner.train_size = examples.size() - options.dev;
  learner.group_loss = &group_loss;
  learner.outcome_of = &outcome_of;
  std::vector<size_t> warmup(static_cast<size_t>(options.warmup)), timed(static_cast<size_t>(options.steps));
  std::iota(warmup.begin(), warmup.end(), size_t(0));
  std::iota(timed.begin(), timed.end(), warmup.size());
  dynet::mp::run_sp_minibatch_trainer(&learner, &trainer, warmup);
  std::vector<std::unique_ptr<dynet::AdamTrainer>> own;
  std::vector<dynet::Trainer*> trainers{&trainer};
  for (unsigned w = 1; options.own_trainers && w < options.workers; ++w) {
    own.push_back(std::make_unique<dynet::AdamTrainer>(*trainer.model));
    own.back()->clipping_enabled = false;
    trainers.push_back(own.back().get());
  }
  Result r;
  r.steps = options.steps;
  r.warmup = options.warmup;
  r.minibatch = options.minibatch;
  r.threads = options.threads;
  r.workers = options.workers;
  r.own_trainers = options.own_trainers;
  r.exclusive_updates = options.exclusive_updates;
  r.data = data_kind(options.data_dir);
  dynet::mp::asynchronous_updates = !options.exclusive_updates;
  const double faults = minor_faults(), cpu = cpu_seconds();
  const dynet::DeviceCounters work = device_counters();
  const auto start = std::chrono::steady_clock::now();
  const StepOutcome total = dynet::mp::run_mp_minibatch_trainer(
      std::vector<dynet::mp::ILearner<size_t, StepOutcome>*>(options.workers, &learner), trainers, timed);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.minor_faults = minor_faults() - faults;
  r.cpu_seconds = cpu_seconds() - cpu;
  r.device_work = device_counters() - work;
  r.loss_sum = total.loss;
  r.loss_count = total.loss_terms;
  r.units = total.units;
  r.nodes = total.nodes;
  return r;
}

// The summed loss and loss terms of examples [first, last) (forward only; with dist, this rank's shard of
// them, summed over the ranks).
template <typename Example, typename GroupLossFn, typename OutcomeFn>
std::pair<double, double> held_out_loss(const std::vector<Example>& examples, size_t first, size_t last,
                                        GroupLossFn& group_loss, OutcomeFn& outcome_of,
                                        const dynet::mpi::DistributedTrainer* dist) {
  if (dist) {
    const auto [a, b] = dist->shard(last - first);
    std::tie(first, last) = std::pair<size_t, size_t>(first + a, first + b);
  }
  double loss = 0, terms = 0;
  for (size_t i = first; i < last; ++i) {
    dynet::ComputationGraph cg;
    const std::vector<const Example*> group{&examples[i]};
    loss += dynet::as_scalar(cg.forward(group_loss(cg, group)));
    terms += outcome_of(examples[i]).loss_terms;
  }
  if (!dist) return {loss, terms};
  const std::vector<double> total = dist->sum(std::vector<double>{loss, terms});
  return {total[0], total[1]};
}

// Trains the collection with Adam, without clipping (PyTorch's optimisers do not clip either), as
// train_and_time does: step k covers examples[(k·B + i) % n], i < B = update_batch, n the examples
// not held out by --dev (with
// mpi, this rank's shard of them). It builds a new graph (as DyNet's C++ examples do, so graph turnover
// is part of what is measured) with group_loss(cg, group) over those examples, runs forward, backward
// and the update; outcome_of(ex) gives each example's loss terms and units (summed over the ranks with
// mpi; the loss is filled in).
template <typename Example, typename GroupLossFn, typename OutcomeFn>
Result train_groups_with_adam(const Options& options, dynet::ParameterCollection& pc,
                              const std::vector<Example>& examples, GroupLossFn&& group_loss, OutcomeFn&& outcome_of) {
  dynet::AdamTrainer trainer(pc);
  trainer.clipping_enabled = false;
  std::unique_ptr<dynet::mpi::DistributedTrainer> dist;
  if (options.mpi) dist = std::make_unique<dynet::mpi::DistributedTrainer>(trainer);
  if (options.dev >= examples.size())
    throw std::invalid_argument("--dev " + std::to_string(options.dev) + " leaves no training examples (there are " +
                                std::to_string(examples.size()) + ")");
  const size_t train_size = examples.size() - options.dev;
  auto with_dev_loss = [&](Result r) {
    if (options.dev == 0) return r;
    r.dev_examples = static_cast<int>(options.dev);
    std::tie(r.dev_loss_sum, r.dev_loss_count) =
        held_out_loss(examples, train_size, examples.size(), group_loss, outcome_of, dist.get());
    return r;
  };
  if (options.workers > 1) return with_dev_loss(train_on_workers(options, trainer, examples, group_loss, outcome_of));
  const size_t per_update = options.update_batch;
  std::vector<const Example*> group;
  dynet::mpi::ReduceStats before;
  double update_seconds = 0;
  Result r = train_and_time(options, [&](int k) {
    if (dist && k == options.warmup) before = dist->stats();
    const auto [first, last] = dist ? dist->shard(per_update) : std::pair<size_t, size_t>(0, per_update);
    group.clear();
    StepOutcome out;
    for (size_t i = first; i < last; ++i) {
      const Example& ex = examples[(static_cast<size_t>(k) * per_update + i) % train_size];
      group.push_back(&ex);
      const StepOutcome o = outcome_of(ex);
      out.loss_terms += o.loss_terms;
      out.units += o.units;
    }
    if (!group.empty()) {
      dynet::ComputationGraph cg;
      dynet::Expression loss = group_loss(cg, group);
      out.nodes = cg.size();
      out.loss = dynet::as_scalar(cg.forward(loss));
      cg.backward(loss);
    }
    const auto update_start = std::chrono::steady_clock::now();
    trainer.update();
    if (k >= options.warmup)
      update_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - update_start).count();
    if (dist) {
      const std::vector<double> total = dist->sum(std::vector<double>{out.loss, out.loss_terms, out.units});
      out = StepOutcome{total[0], total[1], total[2], out.nodes};
    }
    return out;
  });
  r.update_batch = options.update_batch;
  r.update_seconds = update_seconds;
  if (dist) {
    r.ranks = dist->size();
    r.reduce_seconds = dist->stats().seconds - before.seconds;
    r.reduce_wait_seconds = dist->stats().wait_seconds - before.wait_seconds;
  }
  return with_dev_loss(r);
}

// train_groups_with_adam with per-example code: loss_of(cg, ex) builds one example's loss and a group's
// loss is their sum (autobatching, when on, batches across them).
template <typename Example, typename LossFn, typename OutcomeFn>
Result train_with_adam(const Options& options, dynet::ParameterCollection& pc, const std::vector<Example>& examples,
                       LossFn&& loss_of, OutcomeFn&& outcome_of) {
  std::vector<dynet::Expression> losses;
  return train_groups_with_adam(
      options, pc, examples,
      [&](dynet::ComputationGraph& cg, const std::vector<const Example*>& group) {
        if (group.size() == 1) return loss_of(cg, *group[0]);
        losses.clear();
        for (const Example* ex : group) losses.push_back(loss_of(cg, *ex));
        return dynet::sum(losses);
      },
      outcome_of);
}

// main() of a task program: parses the options, initialises the library and prints the Result that
// task(options) returns; an exception is printed to stderr as "<program>: <message>" (exit status 1).
// needs_data: --data DIR is required (false for tasks that make their own data).
template <typename TaskFn>
int task_main(const char* program, int argc, char** argv, TaskFn&& task, bool needs_data = true) {
  try {
    const Options options = parse_options(program, argc, argv, needs_data);
    initialize_library(options);
    const Result result = task(options);
    if (!options.mpi || dynet::mpi::is_root()) print_result(result);
  } catch (const std::exception& e) {
    dynet::mpi::mark_failed();  // with --mpi: exit without MPI_Finalize so that mpirun ends the job
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  return 0;
}

}  // namespace bench
