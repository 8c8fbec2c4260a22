// The non-template parts of dynet/mp.h: the worker threads and argument checks.
#include "dynet/mp.h"

#include <condition_variable>
#include <exception>
#include <optional>
#include <thread>

#include "core/param_lock.h"
#include "dynet/model.h"

namespace dynet::mp {

std::atomic<bool> stop_requested{false};
std::atomic<bool> asynchronous_updates{true};

namespace detail {

struct WorkerPool::State {
  std::mutex mutex;
  std::condition_variable start, done;
  unsigned generation = 0;  // bumped to start a loop
  unsigned running = 0;     // pool threads still in the current loop
  bool quit = false;
  const std::function<void(unsigned, size_t)>* body = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  bool asynchronous = false;
  std::exception_ptr error;
  std::vector<std::thread> threads;

  // Takes indices until none are left, a call failed or a stop was requested.
  void work(unsigned worker) {
    std::optional<AsynchronousTraining> async;
    if (asynchronous) async.emplace();
    while (!failed.load(std::memory_order_relaxed) && !stop_requested.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        (*body)(worker, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  }

  void thread_main(unsigned worker) {
    unsigned seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      start.wait(lock, [&] { return quit || generation != seen; });
      if (quit) return;
      seen = generation;
      lock.unlock();
      work(worker);
      lock.lock();
      if (--running == 0) done.notify_all();
    }
  }
};

WorkerPool::WorkerPool(unsigned workers) : workers_(workers), state_(std::make_unique<State>()) {
  if (workers == 0) throw std::invalid_argument("dynet::mp: the number of workers must be at least 1");
  // The calling thread is worker 0.
  for (unsigned w = 1; w < workers; ++w) state_->threads.emplace_back([this, w] { state_->thread_main(w); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->quit = true;
  }
  state_->start.notify_all();
  for (std::thread& t : state_->threads) t.join();
}

void WorkerPool::run(size_t n, const std::function<void(unsigned, size_t)>& body, bool asynchronous) {
  if (n == 0) return;
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.body = &body;
    s.n = n;
    s.next = 0;
    s.failed = false;
    s.error = nullptr;
    s.asynchronous = asynchronous && workers_ > 1 && asynchronous_updates;
    s.running = static_cast<unsigned>(s.threads.size());
    ++s.generation;
  }
  s.start.notify_all();
  s.work(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.done.wait(lock, [&] { return s.running == 0; });
    error = s.error;
  }
  if (error) std::rethrow_exception(error);
}

void check_run(const char* where, const char* count_name, unsigned count, const void* learner, const void* trainer,
               bool need_trainer, unsigned dev_frequency, unsigned report_frequency) {
  const std::string w = std::string("dynet::mp::") + where + ": ";
  if (count == 0) throw std::invalid_argument(w + count_name + " must be at least 1");
  if (!learner) throw std::invalid_argument(w + "the learner is null");
  if (need_trainer && !trainer) throw std::invalid_argument(w + "the trainer is null");
  if (dev_frequency == 0) throw std::invalid_argument(w + "dev_frequency must be at least 1");
  if (report_frequency == 0) throw std::invalid_argument(w + "report_frequency must be at least 1");
}

Updater::Updater(const char* where, const std::vector<Trainer*>& trainers, unsigned workers)
    : trainers_(trainers), workers_(workers) {
  const std::string w = std::string("dynet::mp::") + where + ": ";
  if (trainers.size() != 1 && trainers.size() != workers)
    throw std::invalid_argument(w + "give one trainer for all workers or one per worker, not " +
                                std::to_string(trainers.size()) + " for " + std::to_string(workers));
  for (const Trainer* t : trainers) {
    if (!t) throw std::invalid_argument(w + "a trainer is null");
    if (workers < 2) continue;
    for (const auto& decay : t->model->get_storage().weight_decays)
      if (decay->get_lambda() != 0)
        throw std::invalid_argument(w + "several workers cannot train a collection with weight decay (lambda " +
                                    std::to_string(decay->get_lambda()) +
                                    "): its lazy scale is shared outside the parameters' locks");
  }
}

void Updater::update(unsigned worker) { trainers_[trainers_.size() > 1 ? worker : 0]->update(); }

void average_gradients(Trainer& trainer, unsigned n) {
  if (n == 1) return;
  const float a = 1.f / static_cast<float>(n);
  auto scale = [a](float* g, size_t size) {
    for (size_t k = 0; k < size; ++k) g[k] *= a;
  };
  // Only the gradients that exist (a sparse table's untouched rows are zero and stay so).
  std::unique_lock<::dynet::detail::ParameterLock> lock(::dynet::detail::parameter_lock());
  const ParameterCollectionStorage& s = trainer.model->get_storage();
  for (const auto& p : s.params)
    if (p->nonzero_grad) scale(p->g.v, p->dim.size());
  for (const auto& p : s.lookup_params) {
    if (!p->nonzero_grad) continue;
    if (p->all_updated) {
      scale(p->all_grads.v, p->all_dim.size());
    } else {
      for (unsigned r : p->non_zero_grads) scale(p->grads[r].v, p->dim.size());
    }
  }
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace detail
}  // namespace dynet::mp
