// The process-wide parameter lock: what makes training from several threads over shared parameters
// safe (docs/design.md, "Several graphs at once").
//   shared (reader) side:   ComputationGraph forward and backward calls; asynchronous updates
//                            (AsynchronousTraining), which also take each parameter's mutex in turn
//   exclusive (writer):      Trainer::update and the other calls that change values or gradients
//                            wholesale (reset_gradient, populate, Parameter::zero/scale/set_value...),
//                            and savers (under the shared side, gradients and values may be changing)
// Backward's accumulation into one parameter also takes that parameter's mutex, so any number of
// graphs may run forward and backward at once, and an update sees every gradient accumulated before
// it and none half-written, and clears exactly what it applied.
// Writers are preferred: a steady stream of forwards from other threads cannot starve an update.
// Not recursive: a thread holding either side must not take the lock again.
#pragma once

#include <pthread.h>

#include <vector>

#include "core/thread_scope.h"
#include "dynet/model.h"

namespace dynet::detail {

class ParameterLock {
 public:
  ParameterLock();
  ~ParameterLock();
  ParameterLock(const ParameterLock&) = delete;
  ParameterLock& operator=(const ParameterLock&) = delete;
  void lock_shared() { check(pthread_rwlock_rdlock(&rw_)); }
  void unlock_shared() { pthread_rwlock_unlock(&rw_); }
  void lock() { check(pthread_rwlock_wrlock(&rw_)); }
  void unlock() { pthread_rwlock_unlock(&rw_); }

 private:
  // A thread taking the lock it holds (EDEADLK) is a bug in the library: throws std::logic_error.
  static void check(int status) {
    if (status != 0) fail(status);
  }
  [[noreturn]] static void fail(int status);
  pthread_rwlock_t rw_;
};

ParameterLock& parameter_lock();

// The number of live AsynchronousTraining objects (dynet/model.h) in the process. Changed only under
// the exclusive side of the parameter lock and read under the shared side (parameter and lookup nodes,
// during forward), so it cannot change while a forward call runs. While it is nonzero those nodes copy
// each parameter's values under the parameter's mutex instead of aliasing them, since asynchronous
// updates on other threads write values under that mutex alone.
inline int asynchronous_sessions = 0;

// While one is alive on its thread, ParameterStorage::accumulate_grad holds back gradients on devices other
// than the CPU; push() adds them all, on each device with one kernel (Device::add_segments), under their
// parameters' mutexes (taken in address order, so pushes on several threads cannot deadlock). The
// executors push a backward pass's parameter gradients so: one launch per device, not one per parameter.
// Destroyed without push(), it drops what it holds (a failed pass leaves the parameters alone).
class HeldGradients : public ThreadScope<HeldGradients> {
 public:
  void hold(ParameterStorage* p, const Tensor& g);
  void push();

 private:
  struct Held {
    ParameterStorage* p;
    const float* g;
  };
  std::vector<Held> held_;
};

}  // namespace dynet::detail
