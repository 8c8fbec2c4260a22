#include "core/executor.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace dynet {

namespace {
struct Spare {
  int strategy;
  std::unique_ptr<Executor> exec;
  GraphVectors vectors;
};
struct SpareList {
  std::mutex mutex;
  std::vector<Spare> spares;  // most recently released last
};
// Never destroyed: graphs that die during static destruction still find it.
SpareList& spare_list() {
  static SpareList* list = new SpareList;
  return *list;
}
size_t max_spares() {
  static const size_t n = std::max<size_t>(4, 2 * size_t(std::thread::hardware_concurrency()));
  return n;
}
}  // namespace

std::unique_ptr<Executor> acquire_executor(const ComputationGraph& cg, int strategy, GraphVectors* vectors) {
  SpareList& list = spare_list();
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    for (size_t k = list.spares.size(); k-- > 0;) {
      if (list.spares[k].strategy != strategy) continue;
      Spare spare = std::move(list.spares[k]);
      list.spares.erase(list.spares.begin() + static_cast<std::ptrdiff_t>(k));
      *vectors = std::move(spare.vectors);
      spare.exec->rebind(cg);
      return std::move(spare.exec);
    }
  }
  return make_executor(cg, strategy);
}

void release_executor(std::unique_ptr<Executor> exec, int strategy, GraphVectors&& vectors) noexcept {
  if (!exec) return;
  vectors.nodes.clear();
  vectors.args.clear();
  vectors.attrs.clear();
  std::fill(vectors.cse.begin(), vectors.cse.end(), 0);  // its entries name nodes of the dying graph
  SpareList& list = spare_list();
  std::unique_ptr<Executor> dropped;  // freed outside the lock
  try {
    std::lock_guard<std::mutex> lock(list.mutex);
    if (list.spares.size() >= max_spares()) {
      dropped = std::move(list.spares.front().exec);
      list.spares.erase(list.spares.begin());
    }
    list.spares.push_back(Spare{strategy, std::move(exec), std::move(vectors)});
  } catch (...) {
    // Out of memory or a failed lock: the executor is simply freed.
  }
}

void free_spare_executors() {
  std::vector<Spare> spares;
  {
    std::lock_guard<std::mutex> lock(spare_list().mutex);
    spares.swap(spare_list().spares);
  }
}

}  // namespace dynet
