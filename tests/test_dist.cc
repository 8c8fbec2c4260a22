// The gradient-reducer hook of Trainer::update and what dynet/mpi.h does in a job of one rank.
// The multi-rank behaviour is tested under mpirun (tests/mpi).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "dynet/expr.h"
#include "dynet/gradient-reducer.h"
#include "dynet/model.h"
#include "dynet/mpi.h"
#include "dynet/param-init.h"
#include "dynet/training.h"

namespace dynet {
namespace {

// Stands in for other workers: adds their gradients to this one's, the way a reducer must.
class AddRemoteGradients : public GradientReducer {
 public:
  void reduce(ParameterCollection& model, bool sparse_updates) override {
    ++calls;
    last_sparse = sparse_updates;
    ParameterStorage& p = *model.get_storage().params[0];
    for (unsigned k = 0; k < p.dim.size(); ++k) p.g.v[k] += 1.f;
    p.nonzero_grad = true;
    LookupParameterStorage& l = *model.get_storage().lookup_params[0];
    l.grads[2].v[0] += 4.f;
    l.non_zero_grads.insert(2);
    l.nonzero_grad = true;
  }
  int calls = 0;
  bool last_sparse = false;
};

TEST(GradientReducer, UpdateReducesBeforeClippingAndTheRule) {
  ParameterCollection pc;
  Parameter p = pc.add_parameters({2}, ParameterInitConst(0.f));
  LookupParameter l = pc.add_lookup_parameters(3, {1}, ParameterInitConst(0.f));
  SimpleSGDTrainer sgd(pc, 0.5f);
  AddRemoteGradients reducer;
  sgd.set_gradient_reducer(&reducer);
  EXPECT_EQ(sgd.gradient_reducer(), &reducer);
  // No local gradient at all: the rule still sees the remote ones (a local skip would diverge).
  sgd.update();
  EXPECT_EQ(reducer.calls, 1);
  EXPECT_TRUE(reducer.last_sparse);
  EXPECT_FLOAT_EQ(p.get_storage().values.v[0], -0.5f);
  EXPECT_FLOAT_EQ(p.get_storage().values.v[1], -0.5f);
  EXPECT_FLOAT_EQ(l.get_storage().values[2].v[0], -2.f);
  EXPECT_FLOAT_EQ(l.get_storage().values[0].v[0], 0.f);
  // The clipping norm covers the reduced gradients: ||(1, 1, 4)|| = sqrt(18) > 3.
  sgd.clip_threshold = 3.f;
  sgd.set_sparse_updates(false);
  sgd.update({0}, {0});
  EXPECT_EQ(reducer.calls, 2);
  EXPECT_FALSE(reducer.last_sparse);
  EXPECT_EQ(sgd.clips, 1);
  EXPECT_NEAR(p.get_storage().values.v[0], -0.5f - 0.5f * 3.f / std::sqrt(18.f), 1e-6);
  sgd.set_gradient_reducer(nullptr);
  sgd.update();
  EXPECT_EQ(reducer.calls, 2);
}

TEST(Mpi, ShardsAreContiguousAndCoverTheMinibatch) {
  for (int ranks : {1, 2, 3, 5})
    for (size_t n : {0u, 1u, 2u, 7u, 10u}) {
      size_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        auto [first, last] = mpi::shard(n, r, ranks);
        EXPECT_EQ(first, next) << n << " over " << ranks;
        EXPECT_LE(last - first, n / ranks + 1);
        EXPECT_GE(last - first, n / ranks);
        next = last;
      }
      EXPECT_EQ(next, n);
    }
  EXPECT_THROW(mpi::shard(4, 2, 2), std::invalid_argument);
  EXPECT_THROW(mpi::shard(4, 0, 0), std::invalid_argument);
}

// Outside mpirun a program is a job of one rank: DistributedTrainer changes nothing.
TEST(Mpi, OneRankTrainsLikeThePlainTrainer) {
  auto train = [](bool distributed) {
    ParameterCollection pc;
    Parameter w = pc.add_parameters({2, 2}, ParameterInitFromVector({0.5f, -0.25f, 1.f, 0.75f}));
    LookupParameter e = pc.add_lookup_parameters(4, {2}, ParameterInitConst(0.1f));
    AdamTrainer adam(pc, 0.1f);
    std::unique_ptr<mpi::DistributedTrainer> dist;
    if (distributed) {
      dist = std::make_unique<mpi::DistributedTrainer>(adam);
      EXPECT_EQ(dist->size(), 1);
      EXPECT_TRUE(dist->is_root());
      EXPECT_EQ(dist->shard(5), std::make_pair(size_t(0), size_t(5)));
      EXPECT_EQ(dist->sum(2.5), 2.5);
      EXPECT_THROW(mpi::DistributedTrainer again(adam), std::invalid_argument);
    }
    for (unsigned step = 0; step < 3; ++step) {
      ComputationGraph cg;
      Expression loss = squared_norm(parameter(cg, w) * lookup(cg, e, step % 4));
      cg.forward(loss);
      cg.backward(loss);
      adam.update();
    }
    if (dist) EXPECT_EQ(dist->stats().updates, 0u);  // nothing to exchange with one rank
    dist.reset();
    EXPECT_EQ(adam.gradient_reducer(), nullptr);
    std::vector<float> v(w.get_storage().values.v, w.get_storage().values.v + 4);
    v.insert(v.end(), e.get_storage().all_values.v, e.get_storage().all_values.v + 8);
    return v;
  };
  EXPECT_EQ(train(true), train(false));
}

}  // namespace
}  // namespace dynet
