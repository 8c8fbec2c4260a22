// dynet::mpi (dynet/mpi.h): the gradient all-reduce hook and its MPI transport. Without MPI
// (DYNET_HAVE_MPI unset) every communicator has one rank and the collectives are never reached.
#include "dynet/mpi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "dynet/devices.h"
#include "dynet/globals.h"
#include "dynet/init.h"
#include "dynet/model.h"
#include "dynet/training.h"

#if DYNET_HAVE_MPI
#include <mpi.h>
#endif

namespace dynet::mpi {

namespace {

std::atomic<bool> g_failed{false};
std::mutex g_init_mutex;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if !DYNET_HAVE_MPI
// The rank count a launcher announced in the environment (1 when started on its own).
int launched_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 1) return n;
    }
  }
  return 1;
}
#endif

// FNV-1a over 64-bit words: the fingerprint ranks compare before exchanging gradient buffers.
struct Fingerprint {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t x) {
    for (int b = 0; b < 8; ++b) {
      h ^= (x >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void add_float(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    add(bits);
  }
};

#if DYNET_HAVE_MPI
void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string("dynet::mpi: ") + what + " failed: " + std::string(text, len));
}

void finalize_at_exit() {
  // A failed rank must not wait in MPI_Finalize for ranks that wait for it: exiting without it makes
  // mpirun end the job.
  if (g_failed) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

MPI_Comm to_comm(const Communicator& c) { return c.is_world() ? MPI_COMM_WORLD : MPI_Comm_f2c(c.fortran_handle()); }

// Collectives move at most this many elements per call, so counts stay within int.
constexpr size_t kMaxPiece = size_t(1) << 28;
#endif

}  // namespace

bool available() { return DYNET_HAVE_MPI != 0; }

void initialize(int* argc, char*** argv) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
#if DYNET_HAVE_MPI
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("dynet::mpi::initialize: MPI has been finalised already");
  if (initialised) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
#else
  (void)argc;
  (void)argv;
  if (const int n = launched_size(); n > 1)
    throw std::runtime_error("dynet::mpi::initialize: this process is one of " + std::to_string(n) +
                             " ranks, but dynet was built without MPI (configure with -DDYNET_MPI=ON and "
                             "install libopenmpi-dev)");
#endif
}

int rank() {
  initialize();
#if DYNET_HAVE_MPI
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
#else
  return 0;
#endif
}

int size() {
  initialize();
#if DYNET_HAVE_MPI
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
#else
  return 1;
#endif
}

bool is_root() { return rank() == 0; }

void mark_failed() { g_failed = true; }

void abort(const std::string& message) {
  g_failed = true;
  int r = 0;
#if DYNET_HAVE_MPI
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  if (initialised && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  std::fprintf(stderr, "dynet::mpi: rank %d: %s\n", r, message.c_str());
  std::fflush(stderr);
  if (initialised && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
#else
  std::fprintf(stderr, "dynet::mpi: rank %d: %s\n", r, message.c_str());
#endif
  std::_Exit(1);
}

std::pair<size_t, size_t> shard(size_t n, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw std::invalid_argument("dynet::mpi::shard: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                                " ranks");
  const size_t k = static_cast<size_t>(ranks), r = static_cast<size_t>(rank);
  const size_t base = n / k, extra = n % k;
  const size_t first = r * base + std::min(r, extra);
  return {first, first + base + (r < extra ? 1 : 0)};
}

Communicator Communicator::from_fortran(int handle) {
#if DYNET_HAVE_MPI
  if (handle < 0) throw std::invalid_argument("dynet::mpi::Communicator::from_fortran: bad handle " + std::to_string(handle));
  Communicator c;
  c.handle_ = handle;
  return c;
#else
  throw std::runtime_error("dynet::mpi::Communicator::from_fortran: dynet was built without MPI (handle " +
                           std::to_string(handle) + ")");
#endif
}

// ---------------- DistributedTrainer ----------------

struct DistributedTrainer::Impl {
#if DYNET_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif
  std::mutex mutex;  // one reduce at a time (MPI_THREAD_SERIALIZED; workers may share a trainer)
  // Buffers kept across updates so that a steady training loop allocates nothing here.
  std::vector<unsigned char> flags;
  std::vector<std::pair<float*, size_t>> dense;  // the gradients the fused buffer covers, in order
  std::vector<float> fused;
  std::vector<size_t> sparse_tables;
  std::vector<unsigned char> blob, gathered;
  std::vector<int> blob_sizes, displs;
  std::vector<size_t> cursor;
  std::vector<unsigned> rows, union_rows;

  // Sums fused[0, n) over the ranks in place, in pieces that keep counts within int. Every rank gets
  // the same bits: float addition is commutative, and each of OpenMPI's allreduce algorithms (recursive
  // doubling, ring, reduce-scatter + allgather) combines the same operands in mirrored order on the
  // ranks that compute an element, or computes it on one rank and copies it. (MPI_Reduce_scatter_block
  // + MPI_Allgather, which is identical by construction, measured 4-5x slower for 75k-215k floats.)
  void sum_fused(size_t n) {
#if DYNET_HAVE_MPI
    for (size_t start = 0; start < n; start += kMaxPiece)
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, fused.data() + start, static_cast<int>(std::min(n - start, kMaxPiece)),
                              MPI_FLOAT, MPI_SUM, comm),
                "MPI_Allreduce");
#else
    (void)n;
#endif
  }

  void broadcast_floats(float* data, size_t n) {
#if DYNET_HAVE_MPI
    for (size_t start = 0; start < n; start += kMaxPiece)
      check_mpi(MPI_Bcast(data + start, static_cast<int>(std::min(n - start, kMaxPiece)), MPI_FLOAT, 0, comm),
                "MPI_Bcast");
#else
    (void)data, (void)n;
#endif
  }

  void or_bytes(unsigned char* v, size_t n) {
#if DYNET_HAVE_MPI
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_UNSIGNED_CHAR, MPI_BOR, comm), "MPI_Allreduce");
#else
    (void)v, (void)n;
#endif
  }

  void max_u64(uint64_t* v, int n) {
#if DYNET_HAVE_MPI
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
#else
    (void)v, (void)n;
#endif
  }

  void sum_doubles(double* v, size_t n) {
#if DYNET_HAVE_MPI
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
#else
    (void)v, (void)n;
#endif
  }

  // Every rank's `blob` into `gathered`, rank after rank; blob_sizes/displs say where each starts.
  void gather_blobs(int ranks) {
    blob_sizes.assign(ranks, 0);
    displs.assign(ranks, 0);
    if (blob.size() > size_t(INT_MAX))
      throw std::runtime_error("dynet::mpi::DistributedTrainer: this rank's lookup rows take " +
                               std::to_string(blob.size()) + " bytes, more than one exchange can carry (2 GiB)");
#if DYNET_HAVE_MPI
    const int mine = static_cast<int>(blob.size());
    check_mpi(MPI_Allgather(&mine, 1, MPI_INT, blob_sizes.data(), 1, MPI_INT, comm), "MPI_Allgather");
    size_t total = 0;
    for (int r = 0; r < ranks; ++r) {
      if (total > size_t(INT_MAX))
        throw std::runtime_error("dynet::mpi::DistributedTrainer: the ranks' lookup rows together exceed 2 GiB");
      displs[r] = static_cast<int>(total);
      total += size_t(blob_sizes[r]);
    }
    gathered.resize(std::max<size_t>(total, 1));
    check_mpi(MPI_Allgatherv(blob.data(), mine, MPI_BYTE, gathered.data(), blob_sizes.data(), displs.data(), MPI_BYTE,
                             comm),
              "MPI_Allgatherv");
#else
    blob_sizes[0] = static_cast<int>(blob.size());
    gathered = blob;
#endif
  }
};

DistributedTrainer::DistributedTrainer(Trainer& trainer, Reduction reduction, Communicator comm)
    : trainer_(&trainer),
      reduction_(reduction),
      uncaught_at_construction_(std::uncaught_exceptions()),
      impl_(std::make_unique<Impl>()) {
  if (trainer.gradient_reducer())
    throw std::invalid_argument("dynet::mpi::DistributedTrainer: the trainer is attached to a gradient reducer already");
  initialize();
#if DYNET_HAVE_MPI
  check_mpi(MPI_Comm_dup(to_comm(comm), &impl_->comm), "MPI_Comm_dup");
  MPI_Comm_rank(impl_->comm, &rank_);
  MPI_Comm_size(impl_->comm, &size_);
#else
  if (!comm.is_world())
    throw std::runtime_error("dynet::mpi::DistributedTrainer: dynet was built without MPI; only the world communicator exists");
#endif
  broadcast_parameters();
  // Drawn from the engine every rank seeded alike, plus the rank: distinct, reproducible streams.
  if (rank_ != 0) reset_rng(static_cast<unsigned>(random_engine()()) + static_cast<unsigned>(rank_));
  trainer.set_gradient_reducer(this);
}

DistributedTrainer::~DistributedTrainer() {
  if (std::uncaught_exceptions() > uncaught_at_construction_) mark_failed();
  if (trainer_->gradient_reducer() == this) trainer_->set_gradient_reducer(nullptr);
#if DYNET_HAVE_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Comm_free is collective in principle; a failed rank leaves it to the job's end.
  if (!finalized && !g_failed && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
#endif
}

void DistributedTrainer::update() { trainer_->update(); }

double DistributedTrainer::sum(double local) const {
  impl_->sum_doubles(&local, 1);
  return local;
}

std::vector<double> DistributedTrainer::sum(const std::vector<double>& local) const {
  std::vector<double> out = local;
  if (!out.empty()) impl_->sum_doubles(out.data(), out.size());
  return out;
}

void DistributedTrainer::barrier() const {
#if DYNET_HAVE_MPI
  check_mpi(MPI_Barrier(impl_->comm), "MPI_Barrier");
#endif
}

void DistributedTrainer::broadcast_parameters() {
  if (size_ == 1) return;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const ParameterCollectionStorage& s = trainer_->model->get_storage();
  // The count and sizes first, so that mismatched models fail here instead of in the broadcast.
  Fingerprint fp;
  fp.add(s.params.size());
  fp.add(s.lookup_params.size());
  for (const auto& p : s.params) fp.add(p->dim.size());
  for (const auto& p : s.lookup_params) fp.add(p->all_dim.size());
  uint64_t check[2] = {fp.h, ~fp.h};
  impl_->max_u64(check, 2);
  if (check[0] != fp.h || check[1] != ~fp.h)
    throw std::runtime_error("dynet::mpi::DistributedTrainer: the ranks' parameter collections differ in their "
                             "parameters' number or sizes (this rank: " + std::to_string(s.params.size()) +
                             " parameters, " + std::to_string(s.lookup_params.size()) +
                             " lookup parameters); every rank must build the same model");
  // Parameters on a GPU live in managed memory: the host reads them once the device's queued work is done.
  for (const auto& p : s.params)
    if (p->values.device) p->values.device->synchronize();
  for (const auto& p : s.lookup_params)
    if (p->all_values.device) p->all_values.device->synchronize();
  std::vector<float>& buf = impl_->fused;
  size_t total = 0;
  for (const auto& p : s.params) total += p->dim.size();
  for (const auto& p : s.lookup_params) total += p->all_dim.size();
  buf.resize(total);
  size_t at = 0;
  for (const auto& p : s.params) at = std::copy_n(p->values.v, p->dim.size(), buf.begin() + at) - buf.begin();
  for (const auto& p : s.lookup_params)
    at = std::copy_n(p->all_values.v, p->all_dim.size(), buf.begin() + at) - buf.begin();
  impl_->broadcast_floats(buf.data(), total);
  at = 0;
  for (const auto& p : s.params) {
    std::copy_n(buf.begin() + at, p->dim.size(), p->values.v);
    at += p->dim.size();
  }
  for (const auto& p : s.lookup_params) {
    std::copy_n(buf.begin() + at, p->all_dim.size(), p->all_values.v);
    at += p->all_dim.size();
  }
}

void DistributedTrainer::reduce(ParameterCollection& model, bool sparse_updates) {
  if (size_ == 1) return;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Impl& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  ParameterCollectionStorage& s = model.get_storage();
  const size_t np = s.params.size(), nl = s.lookup_params.size();

  // 1. Every rank must exchange buffers of the same layout and take the same decisions from them.
  Fingerprint fp;
  fp.add(np);
  fp.add(nl);
  for (const auto& p : s.params) fp.add(p->dim.size() * 2 + (p->updated ? 1 : 0));
  for (const auto& p : s.lookup_params) fp.add((uint64_t(p->all_dim.size()) << 33) + (uint64_t(p->dim.size()) << 1) + (p->updated ? 1 : 0));
  fp.add(sparse_updates);
  fp.add(static_cast<uint64_t>(reduction_));
  fp.add(trainer_->clipping_enabled);
  fp.add_float(trainer_->clip_threshold);
  fp.add_float(trainer_->learning_rate);
  uint64_t check[2] = {fp.h, ~fp.h};
  im.max_u64(check, 2);
  stats_.wait_seconds += seconds_since(t0);
  if (check[0] != fp.h || check[1] != ~fp.h)
    throw std::runtime_error(
        "dynet::mpi::DistributedTrainer::update: the ranks' models or trainers differ (number, sizes or frozen flags "
        "of the parameters, sparse updates, learning rate or clipping); this rank has " + std::to_string(np) +
        " parameters and " + std::to_string(nl) + " lookup parameters, learning rate " +
        std::to_string(trainer_->learning_rate) + ". Every rank must build the same model and trainer");

  // 2. Which parameters have a gradient on some rank (bit 0), which tables are used whole (bit 1).
  im.flags.assign(np + nl, 0);
  for (size_t i = 0; i < np; ++i) im.flags[i] = s.params[i]->updated && s.params[i]->nonzero_grad;
  for (size_t j = 0; j < nl; ++j) {
    const LookupParameterStorage& p = *s.lookup_params[j];
    if (p.updated) im.flags[np + j] = (p.nonzero_grad ? 1 : 0) | (p.all_updated ? 2 : 0);
  }
  im.or_bytes(im.flags.data(), im.flags.size());

  // 3. Dense gradients: one fused buffer.
  im.dense.clear();
  im.sparse_tables.clear();
  size_t dense_total = 0;
  for (size_t i = 0; i < np; ++i)
    if (im.flags[i] & 1) {
      im.dense.emplace_back(s.params[i]->g.v, s.params[i]->dim.size());
      dense_total += s.params[i]->dim.size();
    }
  for (size_t j = 0; j < nl; ++j) {
    LookupParameterStorage& p = *s.lookup_params[j];
    const unsigned char f = im.flags[np + j];
    if (!p.updated) continue;
    p.all_updated = (f & 2) != 0;
    if (f == 3) {
      im.dense.emplace_back(p.all_grads.v, p.all_dim.size());
      dense_total += p.all_dim.size();
    } else if (f == 1) {
      im.sparse_tables.push_back(j);
    }
  }
  const float scale = reduction_ == Reduction::Mean ? 1.f / static_cast<float>(size_) : 1.f;
  if (dense_total > 0) {
    const auto td = std::chrono::steady_clock::now();
    im.fused.resize(dense_total);
    size_t at = 0;
    for (const auto& [g, n] : im.dense) at = std::copy_n(g, n, im.fused.begin() + at) - im.fused.begin();
    im.sum_fused(dense_total);
    at = 0;
    for (const auto& [g, n] : im.dense) {
      for (size_t k = 0; k < n; ++k) g[k] = im.fused[at + k] * scale;
      at += n;
    }
    stats_.dense_seconds += seconds_since(td);
    stats_.dense_floats += dense_total;
    for (size_t i = 0; i < np; ++i)
      if (im.flags[i] & 1) s.params[i]->nonzero_grad = true;
    for (size_t j = 0; j < nl; ++j)
      if (im.flags[np + j] == 3) {
        LookupParameterStorage& p = *s.lookup_params[j];
        p.nonzero_grad = true;
        p.non_zero_grads = std::unordered_set<unsigned>();  // whole-table updates do not read the rows
      }
  }

  // 4. Lookup rows: index + row from every rank, summed in rank order on every rank.
  if (!im.sparse_tables.empty()) {
    const auto ts = std::chrono::steady_clock::now();
    im.blob.clear();
    auto put = [&im](const void* data, size_t bytes) {
      const auto* b = static_cast<const unsigned char*>(data);
      im.blob.insert(im.blob.end(), b, b + bytes);
    };
    for (size_t j : im.sparse_tables) {
      const LookupParameterStorage& p = *s.lookup_params[j];
      im.rows.assign(p.nonzero_grad ? p.non_zero_grads.begin() : p.non_zero_grads.end(), p.non_zero_grads.end());
      std::sort(im.rows.begin(), im.rows.end());
      const uint32_t count = static_cast<uint32_t>(im.rows.size());
      put(&count, sizeof count);
      put(im.rows.data(), im.rows.size() * sizeof(unsigned));
      for (unsigned r : im.rows) put(p.grads[r].v, p.dim.size() * sizeof(float));
      stats_.sparse_rows += count;
    }
    im.gather_blobs(size_);
    im.cursor.assign(size_, 0);
    for (int r = 0; r < size_; ++r) im.cursor[r] = static_cast<size_t>(im.displs[r]);
    for (size_t j : im.sparse_tables) {
      LookupParameterStorage& p = *s.lookup_params[j];
      const size_t row = p.dim.size();
      p.clear_grad();
      im.union_rows.clear();
      for (int r = 0; r < size_; ++r) {
        const unsigned char* at = im.gathered.data() + im.cursor[r];
        uint32_t count;
        std::memcpy(&count, at, sizeof count);
        at += sizeof count;
        const unsigned char* values = at + size_t(count) * sizeof(unsigned);
        for (uint32_t k = 0; k < count; ++k) {
          unsigned index;
          std::memcpy(&index, at + size_t(k) * sizeof(unsigned), sizeof index);
          if (index >= p.values.size())
            throw std::runtime_error("dynet::mpi::DistributedTrainer::update: rank " + std::to_string(r) +
                                     " sent row " + std::to_string(index) + " of " + p.name + ", which has " +
                                     std::to_string(p.values.size()) + " rows");
          float* g = p.grads[index].v;
          const unsigned char* src = values + size_t(k) * row * sizeof(float);
          for (size_t e = 0; e < row; ++e) {
            float x;
            std::memcpy(&x, src + e * sizeof(float), sizeof x);
            g[e] += x;
          }
          im.union_rows.push_back(index);
        }
        im.cursor[r] += sizeof count + size_t(count) * (sizeof(unsigned) + row * sizeof(float));
      }
      std::sort(im.union_rows.begin(), im.union_rows.end());
      im.union_rows.erase(std::unique(im.union_rows.begin(), im.union_rows.end()), im.union_rows.end());
      if (scale != 1.f)
        for (unsigned index : im.union_rows)
          for (size_t e = 0; e < row; ++e) p.grads[index].v[e] *= scale;
      // A fresh set filled in sorted order iterates in the same order on every rank (the clipping norm
      // sums rows in that order).
      p.non_zero_grads = std::unordered_set<unsigned>(im.union_rows.begin(), im.union_rows.end());
      p.nonzero_grad = !im.union_rows.empty();
    }
    stats_.sparse_seconds += seconds_since(ts);
  }
  ++stats_.updates;
  stats_.seconds += seconds_since(t0);
}

}  // namespace dynet::mpi
