// DyNet's mp.h: asynchronous data-parallel training on one machine (Hogwild-style).
//
// DyNet forked child processes that shared the parameters through a shared-memory allocator. Here the
// workers are threads over the one ParameterCollection (graphs of several threads live side by side;
// docs/design.md says why threads and not processes). Each worker takes the next datum, calls
// learner->LearnFromDatum(datum, true) (which builds a graph and runs forward and backward, the
// gradients accumulating into the shared parameters) and then updates, without waiting for the
// others: a worker's graph may see parameters that others updated since it started.
//
// Updates. With one trainer for all workers (DyNet's signatures), the workers' updates take turns (a
// trainer's state, e.g. Adam's moments and step count, is one object); everything else runs in
// parallel. With one trainer per worker (the overloads taking vectors), each worker applies its own
// updates with its own trainer state, concurrently with the other workers' updates: no lock is held
// across parameters, only each parameter's own lock while a trainer writes that parameter (or a
// graph copies it). Nothing tears: a graph sees every parameter (every lookup row) whole, before or
// after any one update (dynet/model.h, AsynchronousTraining). Each update applies the gradients that
// have arrived in the parameters by then, so every datum's gradient is applied exactly once. Lazy
// weight decay is not supported with several workers (std::invalid_argument).
//
// One learner for all workers (DyNet's signatures: run_multi_process, run_mp_minibatch and
// run_mp_minibatch_trainer taking num_children and one ILearner*): the workers' LearnFromDatum calls
// take turns on that learner. DyNet forked its workers, so each had its own copy of the learner and of
// everything it points to, and DyNet's programs keep per-graph state there (an RNN builder given the
// graph by new_graph, Expressions a model keeps between new_graph and the loss); one object called from
// several threads at once would mix their graphs. The other workers' updates go on meanwhile.
// Concurrent LearnFromDatum calls: the overloads taking one learner per worker (a vector; the same
// pointer repeated says the learner is safe to call from several threads at once: each call builds its
// own ComputationGraph and keeps per-graph state out of shared members, e.g. a copy of an RNN builder
// made inside the call, which shares the parameters).
//
// Reports go to std::cerr as in DyNet: "<fractional epoch>\tloss = <loss>" every report_frequency
// training data and, with the time taken, after every dev_frequency training data, followed by
// "<fractional epoch>\tdev loss = <loss>" (with " (New best!)" and a SaveModel() call when the dev loss
// improved). S is the learner's statistic: default-constructible, with +=, < and <<. Dev losses are
// summed in data order, so they do not depend on the number of workers. An exception from a learner
// or a trainer stops the workers and is rethrown by the run_* call; setting stop_requested stops a
// run after the data in progress.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/globals.h"
#include "dynet/training.h"

// DyNet's mp.h included Boost.Interprocess (its children shared memory through it), and DyNet's
// programs name that namespace (`using namespace boost::interprocess;`) without including it.
// Nothing here uses Boost: the namespace is only declared, so such using-directives compile.
namespace boost {
namespace interprocess {}
}  // namespace boost

namespace dynet {
namespace mp {

// Set (e.g. from a signal handler) to end a run after the data in progress.
extern std::atomic<bool> stop_requested;

// true (the default): with several workers, updates are asynchronous (AsynchronousTraining in
// dynet/model.h: each parameter's own lock, the other workers' graphs keep running, and graphs copy
// the parameters they read). false: each update takes the parameter lock exclusively, pausing every
// worker's graph meanwhile, and graphs read the values in place (the measured alternative in
// docs/measurements.md). Read when a run starts.
extern std::atomic<bool> asynchronous_updates;

// What a worker calls once per datum.
template <class D, class S>
class ILearner {
 public:
  virtual ~ILearner() {}
  // Builds the datum's graph and its loss; with learn, runs backward (the gradients accumulate into the
  // shared parameters; the caller updates). Returns the datum's statistic (e.g. its loss).
  virtual S LearnFromDatum(const D& datum, bool learn) = 0;
  // Called (on the calling thread, while no worker runs) when the dev loss improved.
  virtual void SaveModel() = 0;
};

namespace detail {

// A fixed set of threads running one loop at a time. One worker runs on the calling thread only.
class WorkerPool {
 public:
  explicit WorkerPool(unsigned workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  unsigned size() const { return workers_; }
  // Calls body(worker, i) for i in [0, n), each once, on whichever worker is free next, and returns when
  // all calls returned. The first exception a call throws stops the handing out of indices and is
  // rethrown here once every worker has stopped; stop_requested stops the handing out too. With
  // asynchronous (and several workers, and asynchronous_updates), every worker holds an
  // AsynchronousTraining meanwhile.
  void run(size_t n, const std::function<void(unsigned, size_t)>& body, bool asynchronous = false);

 private:
  struct State;
  unsigned workers_;
  std::unique_ptr<State> state_;
};

// The learner of DyNet's one-learner signatures, shared by every worker: calls into it take turns
// (see the top of this file).
template <class D, class S>
class TurnTakingLearner : public ILearner<D, S> {
 public:
  explicit TurnTakingLearner(ILearner<D, S>* learner) : learner_(learner) {}
  S LearnFromDatum(const D& datum, bool learn) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return learner_->LearnFromDatum(datum, learn);
  }
  void SaveModel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    learner_->SaveModel();
  }

 private:
  ILearner<D, S>* learner_;
  std::mutex mutex_;
};

// Throws std::invalid_argument naming `where` when learner (or a needed trainer) is null or a count
// (`count`, called count_name, dev_frequency, report_frequency) is 0.
void check_run(const char* where, const char* count_name, unsigned count, const void* learner, const void* trainer,
               bool need_trainer, unsigned dev_frequency, unsigned report_frequency);
double seconds_since(std::chrono::steady_clock::time_point t);

// Divides the gradients the trainer's collection holds by n (DyNet's update(1.0 / n) after n data).
void average_gradients(Trainer& trainer, unsigned n);

// Who updates after a worker's datum: its own trainer, or the one shared trainer (whose updates take
// turns). Checks
// the trainers (none null, as many as the workers or one, no weight decay with several workers).
class Updater {
 public:
  Updater(const char* where, const std::vector<Trainer*>& trainers, unsigned workers);
  void update(unsigned worker);

 private:
  std::vector<Trainer*> trainers_;
  unsigned workers_;
};

// Every datum's statistic with learn = false, summed in data order.
template <class D, class S>
S evaluate(WorkerPool& pool, const std::vector<ILearner<D, S>*>& learners, const std::vector<D>& data) {
  std::vector<S> each(data.size());
  pool.run(data.size(), [&](unsigned w, size_t i) { each[i] = learners[w]->LearnFromDatum(data[i], false); });
  S total = S();
  for (const S& s : each) total += s;
  return total;
}

// Trains on data[order[k]] for k in [first, last) on the pool's workers, calling after_learning()
// after each datum on the worker that learnt it. Every report_frequency data (counted in the epoch by
// *seen) prints the loss since the last report. Returns the data's summed statistic.
template <class D, class S>
S train_range(WorkerPool& pool, const std::vector<ILearner<D, S>*>& learners,
              const std::function<void(unsigned)>& after_learning,
              const std::vector<D>& data, const std::vector<size_t>& order, size_t first, size_t last,
              unsigned report_frequency, unsigned epoch, size_t* seen, S* since_report) {
  std::mutex mutex;
  S total = S();
  pool.run(last - first, [&](unsigned w, size_t k) {
    S loss = learners[w]->LearnFromDatum(data[order[first + k]], true);
    after_learning(w);
    std::lock_guard<std::mutex> lock(mutex);
    total += loss;
    *since_report += loss;
    if (++*seen % report_frequency == 0) {
      std::cerr << epoch + double(*seen) / double(data.size()) << "\tloss = " << *since_report << std::endl;
      *since_report = S();
    }
  }, /*asynchronous=*/pool.size() > 1);
  return total;
}

// The epochs of run_multi_process / run_single_process.
template <class D, class S>
void run_epochs(WorkerPool& pool, const std::vector<ILearner<D, S>*>& learners,
                const std::function<void(unsigned)>& after_learning,
                const std::vector<D>& train_data, const std::vector<D>& dev_data, unsigned num_iterations,
                unsigned dev_frequency, unsigned report_frequency) {
  std::vector<size_t> order(train_data.size());
  std::iota(order.begin(), order.end(), size_t(0));
  S best_dev = S();
  bool first_dev = true;
  for (unsigned iter = 0; iter < num_iterations && !stop_requested; ++iter) {
    std::shuffle(order.begin(), order.end(), random_engine());
    size_t seen = 0;
    S since_report = S();
    for (size_t first = 0; first < order.size() && !stop_requested; first += dev_frequency) {
      const size_t last = std::min(order.size(), first + dev_frequency);
      const auto start = std::chrono::steady_clock::now();
      const S loss = train_range(pool, learners, after_learning, train_data, order, first, last, report_frequency, iter,
                                 &seen, &since_report);
      const double fraction = iter + double(last) / double(order.size());
      std::cerr << fraction << "\tloss = " << loss << " (" << seconds_since(start) << "s)" << std::endl;
      if (stop_requested) break;
      // Not const: DyNet's statistics types may declare operator< as a non-const member.
      S dev = evaluate(pool, learners, dev_data);
      const bool best = first_dev || dev < best_dev;
      first_dev = false;
      std::cerr << fraction << "\tdev loss = " << dev << (best ? " (New best!)" : "") << std::endl;
      if (stop_requested) break;
      if (best) {
        learners[0]->SaveModel();
        best_dev = dev;
      }
    }
  }
}

}  // namespace detail

// Trains for num_iterations epochs over train_data (shuffled each epoch with the calling thread's
// random engine) on num_children worker threads; every dev_frequency training data the dev set is
// evaluated (on the workers too) and the model saved when the dev loss improved. The workers' calls
// into the one learner take turns (top of this file); their updates do not wait for them.
template <class D, class S>
void run_multi_process(unsigned num_children, ILearner<D, S>* learner, Trainer* trainer, const std::vector<D>& train_data,
                       const std::vector<D>& dev_data, unsigned num_iterations, unsigned dev_frequency,
                       unsigned report_frequency) {
  detail::check_run("run_multi_process", "num_children", num_children, learner, trainer, true, dev_frequency,
                    report_frequency);
  detail::TurnTakingLearner<D, S> shared(learner);
  run_multi_process(std::vector<ILearner<D, S>*>(num_children, &shared), std::vector<Trainer*>{trainer}, train_data,
                    dev_data, num_iterations, dev_frequency, report_frequency);
}

// The same with one learner per worker (learners[0] saves the model) and one trainer per worker (each
// worker's updates run concurrently with the others') or one trainer for all (updates take turns).
// All over the same parameters.
template <class D, class S>
void run_multi_process(const std::vector<ILearner<D, S>*>& learners, const std::vector<Trainer*>& trainers,
                       const std::vector<D>& train_data, const std::vector<D>& dev_data, unsigned num_iterations,
                       unsigned dev_frequency, unsigned report_frequency) {
  const unsigned n = static_cast<unsigned>(learners.size());
  for (size_t w = 0; w < std::max<size_t>(n, 1); ++w)
    detail::check_run("run_multi_process", "the number of learners", n, n ? learners[w] : nullptr, nullptr, false,
                      dev_frequency, report_frequency);
  detail::Updater updater("run_multi_process", trainers, n);
  detail::WorkerPool pool(n);
  detail::run_epochs(pool, learners, [&updater](unsigned w) { updater.update(w); }, train_data, dev_data,
                     num_iterations, dev_frequency, report_frequency);
}

// One thread: trains on each datum in turn, updating after every batch_size data with the mean of
// their gradients, with the same reports, dev evaluations and model saving as run_multi_process.
template <class D, class S>
void run_single_process(ILearner<D, S>* learner, Trainer* trainer, const std::vector<D>& train_data,
                        const std::vector<D>& dev_data, unsigned num_iterations, unsigned dev_frequency,
                        unsigned report_frequency, unsigned batch_size) {
  detail::check_run("run_single_process", "batch_size", batch_size, learner, trainer, true, dev_frequency, report_frequency);
  detail::WorkerPool pool(1);
  unsigned counter = 0;
  detail::run_epochs(pool, std::vector<ILearner<D, S>*>{learner},
                     [&](unsigned) {
                       if (++counter == batch_size) {
                         detail::average_gradients(*trainer, batch_size);
                         trainer->update();
                         counter = 0;
                       }
                     },
                     train_data, dev_data, num_iterations, dev_frequency, report_frequency);
}

// Computes the gradients of all data on num_children threads without updating (they accumulate into
// the parameters; the caller updates). Returns the data's summed statistic (in data order). The calls
// into the one learner take turns (top of this file), so this runs no faster than one thread.
template <class D, class S>
S run_mp_minibatch(unsigned num_children, ILearner<D, S>* learner, const std::vector<D>& data) {
  detail::check_run("run_mp_minibatch", "num_children", num_children, learner, nullptr, false, 1, 1);
  detail::WorkerPool pool(num_children);
  detail::TurnTakingLearner<D, S> shared(learner);
  std::vector<S> each(data.size());
  pool.run(data.size(), [&](unsigned, size_t i) { each[i] = shared.LearnFromDatum(data[i], true); });
  S total = S();
  for (const S& s : each) total += s;
  return total;
}

// One thread: learns from each datum and updates after it (with a trainer; without, only evaluates).
template <class D, class S>
S run_sp_minibatch_trainer(ILearner<D, S>* learner, Trainer* trainer, const std::vector<D>& data) {
  detail::check_run("run_sp_minibatch_trainer", "", 1, learner, trainer, false, 1, 1);
  S total = S();
  for (const D& d : data) {
    total += learner->LearnFromDatum(d, trainer != nullptr);
    if (trainer) trainer->update();
  }
  return total;
}

// num_children threads: each learns from its next datum and then updates (the trainer is shared:
// updates take turns; so do the calls into the one learner); without a trainer only evaluates.
// Returns the summed statistic.
template <class D, class S>
S run_mp_minibatch_trainer(unsigned num_children, ILearner<D, S>* learner, Trainer* trainer, const std::vector<D>& data) {
  detail::check_run("run_mp_minibatch_trainer", "num_children", num_children, learner, trainer, false, 1, 1);
  detail::TurnTakingLearner<D, S> shared(learner);
  const std::vector<ILearner<D, S>*> learners(num_children, &shared);
  if (!trainer) return run_mp_minibatch_trainer(learners, {}, data);
  return run_mp_minibatch_trainer(learners, {trainer}, data);
}

// The same with one learner per worker and one trainer per worker (concurrent updates), one for all
// (updates take turns), or none (evaluation only).
template <class D, class S>
S run_mp_minibatch_trainer(const std::vector<ILearner<D, S>*>& learners, const std::vector<Trainer*>& trainers,
                           const std::vector<D>& data) {
  const unsigned n = static_cast<unsigned>(learners.size());
  for (size_t w = 0; w < std::max<size_t>(n, 1); ++w)
    detail::check_run("run_mp_minibatch_trainer", "the number of learners", n, n ? learners[w] : nullptr, nullptr,
                      false, 1, 1);
  std::unique_ptr<detail::Updater> updater;
  if (!trainers.empty()) updater = std::make_unique<detail::Updater>("run_mp_minibatch_trainer", trainers, n);
  detail::WorkerPool pool(n);
  std::mutex mutex;
  S total = S();
  pool.run(data.size(), [&](unsigned w, size_t i) {
    S s = learners[w]->LearnFromDatum(data[i], updater != nullptr);
    if (updater) updater->update(w);
    std::lock_guard<std::mutex> lock(mutex);
    total += s;
  }, /*asynchronous=*/updater && n > 1);
  return total;
}

}  // namespace mp
}  // namespace dynet
