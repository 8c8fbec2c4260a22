// Links the installed dynet::mpi (libdynet_mpi, the MPI layer in its own library) the way a user's program that
// includes dynet/mpi.h does; run alone, the job has one rank and the wrapped trainer is the plain one.
#include <cstdio>

#include "dynet/dynet.h"
#include "dynet/init.h"
#include "dynet/mpi.h"
#include "dynet/training.h"

int main(int argc, char** argv) {
  dynet::initialize(argc, argv);
  dynet::ParameterCollection model;
  model.add_parameters({2, 2});
  dynet::SimpleSGDTrainer sgd(model);
  dynet::mpi::DistributedTrainer dist(sgd);
  const auto shard = dist.shard(5);
  if (dist.size() != 1 || shard.first != 0 || shard.second != 5 || dist.sum(2.5) != 2.5) {
    std::printf("FAIL: one rank expected: size %d, shard [%u, %u)\n", dist.size(), unsigned(shard.first),
                unsigned(shard.second));
    return 1;
  }
  std::printf("PASS: dynet::mpi linked (MPI %s), one rank\n", dynet::mpi::available() ? "available" : "not built");
  return 0;
}
