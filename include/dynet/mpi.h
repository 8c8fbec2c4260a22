// Synchronous data-parallel training over MPI (many processes, one or many machines).
//
// Every rank builds the same model and trainer, wraps the trainer in a DistributedTrainer, and trains
// on its shard of every minibatch; the trainer's update() all-reduces the gradients first, so every
// rank applies the same update and the parameters stay bitwise identical across ranks:
//
//   dynet::initialize(argc, argv);
//   ParameterCollection pc;  ... build the model ...
//   AdamTrainer adam(pc);
//   dynet::mpi::DistributedTrainer dist(adam);       // rank 0's parameters are broadcast here
//   for (each minibatch mb) {
//     auto [first, last] = dist.shard(mb.size());   // this rank's examples
//     ComputationGraph cg;  Expression loss = sum of the losses of mb[first..last);
//     cg.forward(loss);  cg.backward(loss);
//     adam.update();                                // all-reduce, then the same update everywhere
//     double total = dist.sum(as_scalar(loss.value()));
//     if (dist.is_root()) { report total; save the model when it improved; }
//   }
//
// Launch with `mpirun -np N program` (as root also --allow-run-as-root). Gradients are summed over ranks
// (Reduction::Sum, the default): the update equals one process's update on the whole minibatch when
// each rank's loss is scaled as the whole minibatch's would be (a sum of per-example losses, or that
// sum divided by the whole minibatch's size). Reduction::Mean divides the sum by the rank count.
//
// Per update: dense parameters travel as one fused buffer (one MPI_Allreduce, whose OpenMPI algorithms
// give every rank the same bits; docs/contributing/parallelism.md says why, and the mpirun test checks it); lookup
// parameters travel as the rows that have gradients, index + row (MPI_Allgatherv), summed on every rank
// in rank order, so sparse updates stay sparse. Whether a parameter has a gradient is the OR over ranks, so
// decisions the trainer takes from gradients (skipping a parameter without one, the clipping norm,
// NaN/Inf checks) are the same on every rank. Ranks whose collections differ (counts, sizes, frozen
// flags) all throw std::runtime_error at the next update instead of exchanging mismatched buffers.
//
// Failure: a rank that throws must not leave the others waiting in a collective. When MPI was
// initialised by dynet (the first DistributedTrainer or mpi::initialize call does it unless the program
// or mpi4py already did), it is finalised at exit only if no DistributedTrainer was destroyed by an
// exception and mark_failed() was not called: a failed rank then exits without MPI_Finalize (which would
// wait for the others) and mpirun ends the whole job, after the rank printed its error. mpi::abort()
// ends the job at once.
//
// Built without MPI (-DDYNET_MPI=OFF or OpenMPI missing), available() is false and everything works as
// a job of one rank; initialising inside a launcher that started several ranks then throws.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dynet/gradient-reducer.h"

namespace dynet {

class Trainer;

namespace mpi {

// True when the library was built with MPI.
bool available();

// Initialises MPI (thread level MPI_THREAD_SERIALIZED) unless it is initialised already. argc/argv
// may be null. Throws std::runtime_error when MPI is unavailable but the process was started as one of
// several ranks (an mpirun of a library built without MPI).
void initialize(int* argc = nullptr, char*** argv = nullptr);

// This process's rank and the number of ranks in MPI_COMM_WORLD (initialising MPI when needed).
int rank();
int size();
bool is_root();

// Prints "dynet::mpi: rank R: message" to stderr and ends the whole job (MPI_Abort, status 1).
[[noreturn]] void abort(const std::string& message);

// Marks this process as failed: MPI initialised by dynet is then not finalised at exit, so that mpirun
// ends the job instead of this process waiting in MPI_Finalize for ranks blocked on it.
void mark_failed();

// A communicator, held as its Fortran handle so that this header needs no <mpi.h>: from C/C++ code
// Communicator::from_fortran(MPI_Comm_c2f(comm)), from mpi4py Communicator::from_fortran(comm.py2f()).
class Communicator {
 public:
  Communicator() = default;  // MPI_COMM_WORLD
  static Communicator world() { return Communicator(); }
  static Communicator from_fortran(int handle);
  bool is_world() const { return handle_ < 0; }
  int fortran_handle() const { return handle_; }

 private:
  int handle_ = -1;
};

enum class Reduction { Sum, Mean };

// Rank `rank`'s examples [first, last) of a minibatch of n split over `ranks`: contiguous blocks in rank
// order, the first n % ranks ranks one example more.
std::pair<size_t, size_t> shard(size_t n, int rank, int ranks);

// Where the time of DistributedTrainer::reduce goes (accumulated over updates).
struct ReduceStats {
  unsigned long long updates = 0;
  double seconds = 0;                  // whole reduce() calls, packing included
  double wait_seconds = 0;             // the first (8-byte) collective: mostly waiting for the slowest rank
  double dense_seconds = 0;            // the dense collectives alone
  double sparse_seconds = 0;           // the sparse collectives alone
  unsigned long long dense_floats = 0; // fused dense elements reduced (per rank, summed over updates)
  unsigned long long sparse_rows = 0;  // lookup rows this rank sent
};

// Wraps a trainer for synchronous data parallelism; a GradientReducer attached to the trainer, so
// both dist.update() and trainer.update() all-reduce first. Every rank must construct it (collective),
// with a trainer over the same model, and call update() the same number of times.
class DistributedTrainer : public GradientReducer {
 public:
  // Broadcasts the root's (rank 0's) parameter values to every rank and attaches to `trainer`. Ranks
  // other than the root then reseed their random engines from their rank, so that dropout masks differ
  // across ranks (initialisation agrees through the broadcast, whatever the seeds).
  explicit DistributedTrainer(Trainer& trainer, Reduction reduction = Reduction::Sum,
                              Communicator comm = Communicator::world());
  // Detaches from the trainer. Destroyed by an exception, it calls mark_failed().
  ~DistributedTrainer() override;
  DistributedTrainer(const DistributedTrainer&) = delete;
  DistributedTrainer& operator=(const DistributedTrainer&) = delete;

  // trainer.update(): the all-reduce, then the trainer's rule.
  void update();
  Trainer& trainer() const { return *trainer_; }

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }

  // This rank's examples of a minibatch of n: mpi::shard(n, rank(), size()). A rank with an empty
  // shard still calls update().
  std::pair<size_t, size_t> shard(size_t n) const { return mpi::shard(n, rank_, size_); }
  // Sums of one value per rank (collective; for losses and counts in reports).
  double sum(double local) const;
  std::vector<double> sum(const std::vector<double>& local) const;
  // Broadcasts the root's parameter values again (collective), e.g. after only the root loaded a model.
  void broadcast_parameters();
  // Blocks until every rank has called it.
  void barrier() const;

  const ReduceStats& stats() const { return stats_; }

  // GradientReducer: called by Trainer::update().
  void reduce(ParameterCollection& model, bool sparse_updates) override;

 private:
  struct Impl;
  Trainer* trainer_;
  Reduction reduction_;
  int rank_ = 0, size_ = 1;
  int uncaught_at_construction_;
  ReduceStats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpi
}  // namespace dynet
