// Compiled (not run) with only dynet headers included: the names DyNet's headers made visible that
// DyNet programs use without including them themselves (e.g. DyNet's train_attention.cc uses
// cout and endl without <iostream>, train_rnn-autobatch.cc uses assert without <cassert>, and
// train_textcat.cc getpid without <unistd.h>).
#include "dynet/dict.h"
#include "dynet/dynet.h"
#include "dynet/model.h"
#include "dynet/tensor.h"

using namespace std;
using namespace dynet;

void dynet_compat_visible_names(const Tensor& t) {
  real scale = 2;                         // dynet::real (tensor.h, model.h)
  vector<Eigen::DenseIndex> idx = {1, 2};  // Eigen's index type without Eigen
  cout << t.d << ' ' << scale << ' ' << idx.size() << endl;
  cerr << "ok" << endl;
  assert(scale > 0);  // <cassert> (DyNet's tensor.h included Eigen, which includes it)
  cerr << getpid() << endl;  // <unistd.h> (DyNet's dict.h included Boost's serialization headers)
}
