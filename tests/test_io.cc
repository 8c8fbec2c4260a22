// Model files: DyNet's text format byte for byte, safetensors layout, atomic saves, and loads that
// never leave a half-updated model (truncation and corruption at every byte).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dynet/io.h"
#include "dynet/model.h"
#include "dynet/param-init.h"
#include "dynet/expr.h"
#include "dynet/training.h"
#include "io/atomic_file.h"
#include "io/text_format.h"
#include "temp_dir.h"

namespace dynet {
namespace {

namespace fs = std::filesystem;

class IoTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return tmp_.path(name); }
  // Files in the test directory other than the named ones (leftover temporaries).
  std::vector<std::string> others(std::initializer_list<std::string> expected) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(tmp_.dir())) {
      const std::string n = e.path().filename().string();
      if (std::find(expected.begin(), expected.end(), n) == expected.end()) out.push_back(n);
    }
    return out;
  }
  test::TempDir tmp_;
};

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write_file(const std::string& p, const std::string& bytes) {
  // A new file rather than a truncated one: ext4 flushes truncated-and-rewritten files on close,
  // which made the fuzz loops wait on the disk.
  std::filesystem::remove(p);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

uint64_t header_length(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return n;
}
std::vector<float> floats_at(const std::string& bytes, size_t offset, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data() + offset, n * 4);
  return v;
}

std::vector<float> values_of(const ParameterStorage& p) { return {p.values.v, p.values.v + p.dim.size()}; }
std::vector<float> values_of(const LookupParameterStorage& p) {
  return {p.all_values.v, p.all_values.v + p.all_dim.size()};
}
// All values of a model, parameters then lookup parameters.
std::vector<float> snapshot(const ParameterCollection& m) {
  std::vector<float> out;
  for (auto& p : m.get_storage().params) {
    auto v = values_of(*p);
    out.insert(out.end(), v.begin(), v.end());
    out.insert(out.end(), p->g.v, p->g.v + p->dim.size());
  }
  for (auto& p : m.get_storage().lookup_params) {
    auto v = values_of(*p);
    out.insert(out.end(), v.begin(), v.end());
    out.insert(out.end(), p->all_grads.v, p->all_grads.v + p->all_dim.size());
  }
  return out;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The model of the golden file: W {2,3}, b {2} with a gradient, E: 3 rows of {2}.
struct Golden {
  ParameterCollection m;
  Parameter W, b;
  LookupParameter E;
  Golden() {
    W = m.add_parameters({2, 3}, ParameterInitFromVector({0.5f, -1.25f, 2.f, 0.75f, -3.5f, 1024.f}), "W");
    b = m.add_parameters({2}, ParameterInitFromVector({0.1f, -0.f}));
    E = m.add_lookup_parameters(3, {2}, ParameterInitFromVector({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}), "E");
    std::vector<float> g = {0.125f, -6.103515625e-05f};
    b.get_storage().accumulate_grad(Tensor({2}, g.data()));
  }
};

// Written by hand from the format description: header, then "%+.8e " values, column-major.
// 0.1f is 0.100000001490116...; 2^-14 = 6.103515625e-05 is a tie at 8 decimals and rounds to even.
const char* kGoldenText =
    "#Parameter# /W {2,3} 97 ZERO_GRAD\n"
    "+5.00000000e-01 -1.25000000e+00 +2.00000000e+00 +7.50000000e-01 -3.50000000e+00 +1.02400000e+03 \n"
    "#Parameter# /_0 {2} 66 FULL_GRAD\n"
    "+1.00000001e-01 -0.00000000e+00 \n"
    "+1.25000000e-01 -6.10351562e-05 \n"
    "#LookupParameter# /E {2,3} 97 ZERO_GRAD\n"
    "+1.00000000e+00 +2.00000000e+00 +3.00000000e+00 +4.00000000e+00 +5.00000000e+00 +6.00000000e+00 \n";

// A model with subcollections, random values and some gradients.
struct Random {
  ParameterCollection m;
  Random(unsigned seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> N(0.f, 3.f);
    auto fill = [&](float* v, size_t n) {
      for (size_t i = 0; i < n; ++i) v[i] = N(rng) * std::pow(10.f, float(int(rng() % 20) - 10));
    };
    Parameter a = m.add_parameters({3, 4});
    ParameterCollection sub = m.add_subcollection("layer");
    Parameter c = sub.add_parameters({5}, "bias");
    LookupParameter e = sub.add_lookup_parameters(4, {2, 3}, "emb");
    Parameter d = m.add_parameters({2, 2, 2}, "cube");
    for (auto& p : m.get_storage().params) fill(p->values.v, p->dim.size());
    for (auto& p : m.get_storage().lookup_params) fill(p->all_values.v, p->all_dim.size());
    std::vector<float> g(5);
    fill(g.data(), 5);
    c.get_storage().accumulate_grad(Tensor({5}, g.data()));
    std::vector<float> rg(6);
    fill(rg.data(), 6);
    e.get_storage().accumulate_grad(2, rg.data());
    (void)a;
    (void)d;
  }
};

// A model with the same structure as Random, every value a sentinel.
struct Sentinel : Random {
  Sentinel() : Random(2) {
    for (auto& p : m.get_storage().params) {
      std::fill(p->values.v, p->values.v + p->dim.size(), 42.f);
      p->clear_grad();
    }
    for (auto& p : m.get_storage().lookup_params) {
      std::fill(p->all_values.v, p->all_values.v + p->all_dim.size(), 42.f);
      p->clear_grad();
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Number formatting

TEST(TextFormat, ValuesPrintLikePrintfAndIostreams) {
  std::vector<float> xs = {0.f, -0.f, 1.f, -1.f, 0.1f, 1e-45f, FLT_MIN, FLT_MAX, -FLT_MAX, 123456789.f, 9.99999999e-5f};
  for (int k = 0; k < 40; ++k) xs.push_back(std::ldexp(1.f, -k));  // 2^-k: exact decimals, some are ties
  std::mt19937 rng(7);
  for (int k = 0; k < 20000; ++k) {
    uint32_t bits = rng();
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isfinite(x)) xs.push_back(x);
  }
  for (float x : xs) {
    char mine[32];
    const std::string got(mine, io_detail::format_value(mine, x));
    char ref[64];
    std::snprintf(ref, sizeof ref, "%+.8e ", double(x));
    ASSERT_EQ(got, ref) << "bits of x: " << std::hexfloat << x;
    ASSERT_EQ(got.size(), 16u);
    std::ostringstream os;
    os << std::scientific << std::showpos << std::setprecision(8) << x << ' ';
    ASSERT_EQ(got, os.str());
    float back;
    ASSERT_TRUE(io_detail::parse_float_token(std::string_view(got).substr(0, 15), &back));
    // 9 significant digits identify a float exactly
    ASSERT_EQ(std::memcmp(&back, &x, 4), 0) << got;
  }
}

// ---------------------------------------------------------------------------------------------
// Text format

TEST_F(IoTest, SaveWritesTheGoldenFileByteForByte) {
  Golden g;
  TextFileSaver(path("m.txt")).save(g.m);
  EXPECT_EQ(read_file(path("m.txt")), kGoldenText);
  EXPECT_TRUE(others({"m.txt"}).empty());
}

TEST_F(IoTest, GoldenFileLoadsTheRightValues) {
  write_file(path("m.txt"), kGoldenText);
  ParameterCollection m;
  Parameter W = m.add_parameters({2, 3});
  Parameter b = m.add_parameters({2});
  LookupParameter E = m.add_lookup_parameters(3, {2});
  E.get_storage().accumulate_grad(1, std::vector<float>{9.f, 9.f}.data());  // must be cleared (ZERO_GRAD)
  TextFileLoader(path("m.txt")).populate(m);
  EXPECT_EQ(values_of(W.get_storage()), (std::vector<float>{0.5f, -1.25f, 2.f, 0.75f, -3.5f, 1024.f}));
  // W(row, col) column-major: W(1,0) = -1.25, W(0,1) = 2
  EXPECT_EQ(W.values()->v[1], -1.25f);
  EXPECT_EQ(values_of(b.get_storage())[0], 0.1f);
  EXPECT_TRUE(std::signbit(values_of(b.get_storage())[1]));
  EXPECT_TRUE(b.get_storage().nonzero_grad);
  EXPECT_EQ(b.gradients()->v[0], 0.125f);
  EXPECT_EQ(b.gradients()->v[1], -6.10351562e-05f);
  EXPECT_EQ(values_of(E.get_storage()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(E.values()->at(2).v[1], 6.f);  // row 2 = {5, 6}
  EXPECT_FALSE(E.get_storage().nonzero_grad);
  EXPECT_EQ(E.get_storage().all_grads.v[2], 0.f);
}

// DyNet programs make parameters with no elements for features they turn off (uuparser's POS and treebank
// embeddings of size 0): they train (untouched), save and load like any other, in both formats, as DyNet
// writes them, and enter graphs as DyNet's do: a product with them is zeros.
TEST_F(IoTest, EmptyParametersTrainSaveAndLoad) {
  auto make = [](ParameterCollection& m) {
    return std::make_tuple(m.add_parameters({0}), m.add_parameters({4, 0}), m.add_lookup_parameters(20, {0}),
                           m.add_lookup_parameters(0, {5}), m.add_parameters({2, 3}));
  };
  ParameterCollection m;
  auto [e0, e40, table, rowless, w] = make(m);
  EXPECT_EQ(m.parameter_count(), 6u);
  AdamTrainer adam(m);
  SimpleSGDTrainer sgd(m);
  for (int strategy : {0, 1, 2}) {
    for (Trainer* t : {static_cast<Trainer*>(&adam), static_cast<Trainer*>(&sgd)}) {
      ComputationGraph g(strategy);
      const Expression v = parameter(g, w);
      const Expression features = concatenate({lookup(g, table, 3u), parameter(g, e0), reshape(v, {6})});
      const Expression unused = parameter(g, e40) * lookup(g, table, 5u);  // {4} zeros
      EXPECT_EQ(as_vector(unused.value()), std::vector<float>(4, 0.f));
      EXPECT_EQ(const_parameter(g, rowless).dim(), Dim({5, 0}));
      Expression loss = sum_elems(square(features)) + squared_norm(unused);
      EXPECT_FLOAT_EQ(as_scalar(g.forward(loss)), as_scalar(g.forward(sum_elems(square(v)))));
      g.backward(loss);
      const std::vector<float> value = as_vector(v.value()), gradient = as_vector(v.gradient());
      for (size_t k = 0; k < value.size(); ++k) EXPECT_EQ(gradient[k], 2.f * value[k]);
      t->update();
    }
  }
  try {
    ComputationGraph g;
    lookup(g, rowless, 0u);
    ADD_FAILURE() << "lookup of a table without rows did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lookup: index 0 out of range for " + rowless.get_storage().name),
              std::string::npos)
        << e.what();
  }
  TextFileSaver(path("m.txt")).save(m);
  const std::string text = read_file(path("m.txt"));  // as DyNet writes them: no values, an empty line
  EXPECT_NE(text.find(" {0} 1 ZERO_GRAD\n\n#"), std::string::npos) << text;
  EXPECT_NE(text.find(" {0,20} 1 ZERO_GRAD\n\n"), std::string::npos) << text;
  save_safetensors(path("m.safetensors"), m);
  for (const std::string file : {"m.txt", "m.safetensors"}) {
    ParameterCollection back;
    auto [b0, b40, btable, browless, bw] = make(back);
    if (file == "m.txt")
      TextFileLoader(path(file)).populate(back);
    else
      load_safetensors(path(file), back);
    EXPECT_EQ(as_vector(*bw.values()), as_vector(*w.values())) << file;
    EXPECT_EQ(btable.get_storage().all_dim, Dim({0, 20})) << file;
  }
}

TEST_F(IoTest, SaveLoadSaveIsByteIdentical) {
  Random a;
  TextFileSaver(path("a.txt")).save(a.m);
  Sentinel b;
  TextFileLoader(path("a.txt")).populate(b.m);
  EXPECT_TRUE(same_bits(snapshot(a.m), snapshot(b.m)));
  TextFileSaver(path("b.txt")).save(b.m);
  const std::string text = read_file(path("a.txt"));
  EXPECT_EQ(text, read_file(path("b.txt")));
  // names: unnamed -> _0, subcollection prefix, parameters before lookup parameters
  EXPECT_EQ(text.rfind("#Parameter# /_0 {3,4} 193 ZERO_GRAD\n", 0), 0u) << text.substr(0, 60);
  EXPECT_NE(text.find("\n#Parameter# /layer/bias {5} 162 FULL_GRAD\n"), std::string::npos);
  EXPECT_NE(text.find("\n#Parameter# /cube {2,2,2} 129 ZERO_GRAD\n"), std::string::npos);
  EXPECT_NE(text.find("\n#LookupParameter# /layer/emb {2,3,4} 770 FULL_GRAD\n"), std::string::npos);
  EXPECT_LT(text.find("/cube"), text.find("/layer/emb"));
  // sparse-update bookkeeping of the loaded lookup gradient: only row 2 has one
  const auto& e = *b.m.get_storage().lookup_params[0];
  EXPECT_EQ(e.non_zero_grads, (std::unordered_set<unsigned>{2}));
}

TEST_F(IoTest, KeysAppendAndSingleParameters) {
  Random a(3), c(4);
  {
    TextFileSaver s(path("f.txt"));
    s.save(a.m, "/first");
    s.save(c.m, "/second/");  // a trailing '/' is not doubled
  }
  const std::string text = read_file(path("f.txt"));
  EXPECT_NE(text.find("#Parameter# /first/_0 {3,4}"), std::string::npos);
  EXPECT_NE(text.find("#Parameter# /second/layer/bias {5}"), std::string::npos);
  EXPECT_EQ(text.find("//"), std::string::npos);
  Sentinel x, y;
  TextFileLoader(path("f.txt")).populate(x.m, "/second");
  TextFileLoader(path("f.txt")).populate(y.m, "/first");
  EXPECT_TRUE(same_bits(snapshot(x.m), snapshot(c.m)));
  EXPECT_TRUE(same_bits(snapshot(y.m), snapshot(a.m)));
  // No key: every record counts, so two models' worth is too many for one model.
  Sentinel z;
  const auto before = snapshot(z.m);
  EXPECT_THROW(TextFileLoader(path("f.txt")).populate(z.m), std::runtime_error);
  EXPECT_TRUE(same_bits(snapshot(z.m), before));

  // Append mode adds to an existing file; single parameters with and without keys.
  Golden g;
  {
    TextFileSaver s(path("f.txt"), /*append=*/true);
    s.save(g.W, "/extra");
    s.save(g.E);
  }
  const std::string appended = read_file(path("f.txt"));
  EXPECT_EQ(appended.substr(0, text.size()), text);
  EXPECT_EQ(appended.substr(text.size()),
            "#Parameter# /extra {2,3} 97 ZERO_GRAD\n"
            "+5.00000000e-01 -1.25000000e+00 +2.00000000e+00 +7.50000000e-01 -3.50000000e+00 +1.02400000e+03 \n"
            "#LookupParameter# /E {2,3} 97 ZERO_GRAD\n"
            "+1.00000000e+00 +2.00000000e+00 +3.00000000e+00 +4.00000000e+00 +5.00000000e+00 +6.00000000e+00 \n");
  // A saver without append replaces the file at its first save, then appends.
  {
    TextFileSaver s(path("f.txt"));
    s.save(g.W);
    s.save(g.b, "/bb");
  }
  EXPECT_EQ(read_file(path("f.txt")).rfind("#Parameter# /W {2,3} 97 ZERO_GRAD\n", 0), 0u);
  EXPECT_NE(read_file(path("f.txt")).find("\n#Parameter# /bb {2} 66 FULL_GRAD\n"), std::string::npos);

  ParameterCollection m;
  Parameter W = m.add_parameters({2, 3});
  TextFileLoader(path("f.txt")).populate(W, "/W");
  EXPECT_EQ(values_of(W.get_storage()), values_of(g.W.get_storage()));
  Parameter named = m.add_parameters({2}, "bb");
  TextFileLoader(path("f.txt")).populate(named);  // empty key: its own full name, /bb
  EXPECT_EQ(values_of(named.get_storage()), values_of(g.b.get_storage()));
  EXPECT_EQ(named.gradients()->v[0], 0.125f);
  Parameter absent = m.add_parameters({2}, "zz");
  EXPECT_THROW(TextFileLoader(path("f.txt")).populate(absent), std::runtime_error);
}

TEST_F(IoTest, PopulateSingleAndLoadParam) {
  Golden g;
  TextFileSaver(path("g.txt")).save(g.m);
  ParameterCollection m;
  Parameter W = m.add_parameters({2, 3}, "W");
  TextFileLoader(path("g.txt")).populate(W);  // empty key: the parameter's own full name /W
  EXPECT_EQ(values_of(W.get_storage()), values_of(g.W.get_storage()));
  LookupParameter E = m.add_lookup_parameters(3, {2});
  TextFileLoader(path("g.txt")).populate(E, "/E");
  EXPECT_EQ(values_of(E.get_storage()), values_of(g.E.get_storage()));
  // a record of the other kind with that name does not count
  EXPECT_THROW(TextFileLoader(path("g.txt")).populate(E, "/W"), std::runtime_error);
  Parameter wrong = m.add_parameters({3, 2});
  const auto before = values_of(wrong.get_storage());
  EXPECT_THROW(TextFileLoader(path("g.txt")).populate(wrong, "/W"), std::runtime_error);
  EXPECT_EQ(values_of(wrong.get_storage()), before);

  ParameterCollection fresh;
  Parameter b = TextFileLoader(path("g.txt")).load_param(fresh, "/_0");
  EXPECT_EQ(b.get_fullname(), "/_0");
  EXPECT_EQ(b.dim(), Dim({2}));
  EXPECT_EQ(values_of(b.get_storage()), values_of(g.b.get_storage()));
  EXPECT_EQ(b.gradients()->v[0], 0.125f);
  LookupParameter e = TextFileLoader(path("g.txt")).load_lookup_param(fresh, "/E");
  EXPECT_EQ(e.get_fullname(), "/E");
  EXPECT_EQ(e.dim(), Dim({2}));
  EXPECT_EQ(e.values()->size(), 3u);
  EXPECT_EQ(values_of(e.get_storage()), values_of(g.E.get_storage()));
  EXPECT_EQ(fresh.parameters_list().size(), 1u);
  EXPECT_THROW(TextFileLoader(path("g.txt")).load_param(fresh, "/nope"), std::runtime_error);
  EXPECT_THROW(TextFileLoader(path("g.txt")).load_lookup_param(fresh, "/W"), std::runtime_error);
  EXPECT_EQ(fresh.parameters_list().size(), 1u);
  EXPECT_EQ(fresh.lookup_parameters_list().size(), 1u);
  // a whole file round-trips through load_param-made parameters
  TextFileSaver(path("h.txt")).save(fresh);
  EXPECT_EQ(read_file(path("h.txt")),
            "#Parameter# /_0 {2} 66 FULL_GRAD\n+1.00000001e-01 -0.00000000e+00 \n+1.25000000e-01 -6.10351562e-05 \n"
            "#LookupParameter# /E {2,3} 97 ZERO_GRAD\n+1.00000000e+00 +2.00000000e+00 +3.00000000e+00 "
            "+4.00000000e+00 +5.00000000e+00 +6.00000000e+00 \n");
}

// Records as DyNet 2.x wrote them (from the format description): they load and are written back
// byte for byte.
TEST_F(IoTest, DynetWrittenRecordsRoundTripByteForByte) {
  const std::string dynet_file =
      "#Parameter# /W {2,3} 194 FULL_GRAD\n"
      "+1.11292586e-01 -9.40494716e-01 +4.56029058e-01 +7.44791150e-01 -4.58104789e-01 -8.29627573e-01 \n"
      "-1.25876129e-01 -1.25876129e-01 +7.92586207e-01 +7.92586207e-01 -9.62503970e-01 -9.62503970e-01 \n"
      "#Parameter# /_0 {1} 17 ZERO_GRAD\n"
      "+1.24984801e+00 \n";
  write_file(path("dynet.txt"), dynet_file);
  ParameterCollection m;
  Parameter W = m.add_parameters({2, 3}, "W");
  Parameter b = m.add_parameters({1});
  TextFileLoader(path("dynet.txt")).populate(m);
  EXPECT_EQ(W.values()->v[1], -9.40494716e-01f);
  EXPECT_EQ(W.gradients()->v[4], -9.62503970e-01f);
  EXPECT_EQ(b.values()->v[0], 1.24984801f);
  TextFileSaver(path("again.txt")).save(m);
  EXPECT_EQ(read_file(path("again.txt")), dynet_file);
}

// Saved values are the effective ones, values x the lazy weight-decay scale; loading writes them
// back as plain values (the scale is not saved), as DyNet did.
TEST_F(IoTest, SavedValuesIncludeTheWeightDecayScale) {
  ParameterCollection m(0.5f);
  Parameter W = m.add_parameters({2}, ParameterInitFromVector({1.f, -3.f}), "W");
  LookupParameter E = m.add_lookup_parameters(1, {2}, ParameterInitFromVector({4.f, 8.f}), "E");
  m.get_weight_decay().update_weight_decay(1);
  ASSERT_EQ(W.current_weight_decay(), 0.5f);
  ASSERT_EQ(E.current_weight_decay(), 0.5f);
  TextFileSaver(path("wd.txt")).save(m);
  EXPECT_EQ(read_file(path("wd.txt")),
            "#Parameter# /W {2} 33 ZERO_GRAD\n+5.00000000e-01 -1.50000000e+00 \n"
            "#LookupParameter# /E {2,1} 33 ZERO_GRAD\n+2.00000000e+00 +4.00000000e+00 \n");
  EXPECT_EQ(W.values()->v[0], 1.f);  // saving does not touch the parameters
  save_safetensors(path("wd.safetensors"), m);
  const std::string bytes = read_file(path("wd.safetensors"));
  EXPECT_EQ(floats_at(bytes, 8 + header_length(bytes), 4), (std::vector<float>{0.5f, -1.5f, 2.f, 4.f}));

  ParameterCollection fresh;
  Parameter W2 = fresh.add_parameters({2}, "W");
  LookupParameter E2 = fresh.add_lookup_parameters(1, {2}, "E");
  TextFileLoader(path("wd.txt")).populate(fresh);
  EXPECT_EQ(W2.values()->v[1], -1.5f);
  EXPECT_EQ(E2.values()->at(0).v[1], 4.f);
  load_safetensors(path("wd.safetensors"), fresh);
  EXPECT_EQ(W2.values()->v[0], 0.5f);
}

TEST_F(IoTest, OldHeadersWithoutGradientTokenHaveAGradientLine) {
  write_file(path("old.txt"),
             "#Parameter# /a {2} 66\n+1.00000000e+00 +2.00000000e+00 \n+3.00000000e+00 +4.00000000e+00 \n");
  ParameterCollection m;
  Parameter a = m.add_parameters({2});
  TextFileLoader(path("old.txt")).populate(m);
  EXPECT_EQ(values_of(a.get_storage()), (std::vector<float>{1, 2}));
  EXPECT_EQ(a.gradients()->v[1], 4.f);
}

TEST_F(IoTest, BadKeysAndNamesAreRejected) {
  Golden g;
  TextFileSaver s(path("k.txt"));
  EXPECT_THROW(s.save(g.m, "nokey"), std::invalid_argument);  // a collection key starts with '/'
  EXPECT_THROW(s.save(g.m, "/has space"), std::invalid_argument);
  EXPECT_THROW(s.save(g.W, "/has#hash"), std::invalid_argument);
  EXPECT_THROW(s.save(g.m, "/"), std::invalid_argument);
  ParameterCollection m;
  m.add_parameters({1}, "two words");
  EXPECT_THROW(TextFileSaver(path("k.txt")).save(m), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path("k.txt")));
  EXPECT_TRUE(others({}).empty());
  EXPECT_THROW(TextFileLoader(path("missing.txt")).populate(m), std::runtime_error);
  EXPECT_THROW((void)TextFileSaver(path("no/such/dir/m.txt")), std::runtime_error);
}

TEST_F(IoTest, MismatchedModelsThrowAndStayUnchanged) {
  Random a;
  TextFileSaver(path("a.txt")).save(a.m);
  {  // one parameter fewer
    ParameterCollection m;
    m.add_parameters({3, 4});
    ParameterCollection sub = m.add_subcollection("layer");
    sub.add_parameters({5});
    sub.add_lookup_parameters(4, {2, 3});
    const auto before = snapshot(m);
    EXPECT_THROW(TextFileLoader(path("a.txt")).populate(m), std::runtime_error);
    EXPECT_TRUE(same_bits(snapshot(m), before));
  }
  {  // a dim differs in the last parameter
    ParameterCollection m;
    m.add_parameters({3, 4});
    ParameterCollection sub = m.add_subcollection("layer");
    sub.add_parameters({5});
    sub.add_lookup_parameters(4, {2, 3});
    m.add_parameters({2, 4});
    const auto before = snapshot(m);
    try {
      TextFileLoader(path("a.txt")).populate(m);
      FAIL() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("{2,2,2}"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("{2,4}"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_bits(snapshot(m), before));
  }
  {  // one more parameter than the file has
    Sentinel s;
    s.m.add_parameters({1});
    const auto before = snapshot(s.m);
    EXPECT_THROW(TextFileLoader(path("a.txt")).populate(s.m), std::runtime_error);
    EXPECT_TRUE(same_bits(snapshot(s.m), before));
  }
}

// Loads `bytes` into a sentinel model: either it throws and the model is untouched, or it succeeds
// (then the model holds what the file says, which for a complete file is the original).
template <class Load>
void expect_all_or_nothing(const std::string& file, const std::string& bytes, Load load, bool* succeeded) {
  write_file(file, bytes);
  Sentinel s;
  const auto before = snapshot(s.m);
  try {
    load(s.m);
    *succeeded = true;
  } catch (const std::runtime_error&) {
    *succeeded = false;
    ASSERT_TRUE(same_bits(snapshot(s.m), before)) << "half-updated model after a failed load";
  } catch (const std::invalid_argument&) {
    *succeeded = false;
    ASSERT_TRUE(same_bits(snapshot(s.m), before)) << "half-updated model after a failed load";
  }
}

TEST_F(IoTest, TextTruncatedAtEveryByteThrowsWithoutTouchingTheModel) {
  Random a;
  TextFileSaver(path("a.txt")).save(a.m);
  const std::string full = read_file(path("a.txt"));
  const auto original = snapshot(a.m);
  auto load = [&](ParameterCollection& m) { TextFileLoader(path("t.txt")).populate(m); };
  for (size_t n = 0; n < full.size(); ++n) {
    bool ok;
    expect_all_or_nothing(path("t.txt"), full.substr(0, n), load, &ok);
    ASSERT_FALSE(ok) << "a file truncated to " << n << " of " << full.size() << " bytes loaded";
  }
  bool ok;
  expect_all_or_nothing(path("t.txt"), full, load, &ok);
  EXPECT_TRUE(ok);
}

TEST_F(IoTest, TextWithFlippedBytesNeverCrashesOrHalfUpdates) {
  Random a;
  TextFileSaver(path("a.txt")).save(a.m);
  const std::string full = read_file(path("a.txt"));
  auto load = [&](ParameterCollection& m) { TextFileLoader(path("t.txt")).populate(m); };
  const std::string replacements = "0+-e. \n#{,X/";
  size_t loaded = 0, failed = 0;
  for (size_t pos = 0; pos < full.size(); pos += 3) {
    for (char r : replacements) {
      if (full[pos] == r) continue;
      std::string bad = full;
      bad[pos] = r;
      bool ok;
      expect_all_or_nothing(path("t.txt"), bad, load, &ok);
      (ok ? loaded : failed)++;
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_GT(loaded, 0u);  // e.g. one digit replaced by another
}

// ---------------------------------------------------------------------------------------------
// Atomic saves

TEST_F(IoTest, FailedSaveLeavesThePreviousFile) {
  Golden g;
  TextFileSaver(path("m.txt")).save(g.m);
  const std::string before = read_file(path("m.txt"));
  // A value the format cannot hold makes the save fail after the first record was written.
  Golden bad;
  bad.E.get_storage().all_values.v[3] = NAN;
  try {
    TextFileSaver(path("m.txt")).save(bad.m);
    FAIL() << "NaN saved";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/E"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(path("m.txt")), before);
  EXPECT_TRUE(others({"m.txt"}).empty());
  // Appending as well
  EXPECT_THROW(TextFileSaver(path("m.txt"), true).save(bad.m), std::runtime_error);
  EXPECT_EQ(read_file(path("m.txt")), before);
  EXPECT_TRUE(others({"m.txt"}).empty());
}

// Runs f with the process's file-size limit lowered, so writes past `limit` bytes fail (EFBIG).
template <class F>
void with_file_size_limit(rlim_t limit, F f) {
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit low = old;
  low.rlim_cur = limit;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  try {
    f();
  } catch (...) {
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    throw;
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
}

TEST_F(IoTest, WriteErrorMidSaveLeavesThePreviousFile) {
  Golden small;
  TextFileSaver(path("m.txt")).save(small.m);
  save_safetensors(path("m.safetensors"), small.m);
  const std::string text_before = read_file(path("m.txt"));
  const std::string st_before = read_file(path("m.safetensors"));
  ParameterCollection big;
  big.add_parameters({64, 64});  // 64 KB of text, 16 KB of safetensors data
  with_file_size_limit(6000, [&] {
    EXPECT_THROW(TextFileSaver(path("m.txt")).save(big), std::runtime_error);
    EXPECT_THROW(save_safetensors(path("m.safetensors"), big), std::runtime_error);
  });
  EXPECT_EQ(read_file(path("m.txt")), text_before);
  EXPECT_EQ(read_file(path("m.safetensors")), st_before);
  EXPECT_TRUE(others({"m.txt", "m.safetensors"}).empty());
}

// The temporaries of saves to `target` present in its directory.
std::vector<std::string> temporaries_of(const fs::path& dir, const std::string& target) {
  std::vector<std::string> out;
  const std::string prefix = "." + target + ".dynet-unfinished-save-";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.compare(0, prefix.size(), prefix) == 0) out.push_back(n);
  }
  return out;
}

TEST_F(IoTest, TemporaryOfASaveKilledMidWriteIsRemovedByTheNextSave) {
  Golden g;
  ParameterCollection big;
  big.add_parameters({64, 64});  // 64 KB of text
  // A child process killed by the kernel mid-write (SIGXFSZ at the file-size limit) runs no cleanup.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit lim = {0, 0};
    setrlimit(RLIMIT_CORE, &lim);
    lim = {6000, 6000};
    setrlimit(RLIMIT_FSIZE, &lim);
    signal(SIGXFSZ, SIG_DFL);
    try {
      TextFileSaver(path("m.txt")).save(big);
    } catch (...) {
    }
    ::_exit(0);  // not reached: the write past the limit kills the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << status;
  const auto left = temporaries_of(tmp_.dir(), "m.txt");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(fs::file_size(tmp_.dir() / left[0]), 6000u);
  EXPECT_NE(left[0].find("-" + std::to_string(child) + "-"), std::string::npos) << left[0];
  // Stale temporaries of the same target are removed by its next save; another file's are not.
  tmp_.write(".m.txt.dynet-unfinished-save-1-2-3", "an older crash");
  tmp_.write(".n.txt.dynet-unfinished-save-1-2-3", "another file's");
  tmp_.write(".m.txt.tmp", "not ours");
  TextFileSaver(path("m.txt")).save(g.m);
  EXPECT_TRUE(temporaries_of(tmp_.dir(), "m.txt").empty());
  std::vector<std::string> rest = others({"m.txt"});
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<std::string>{".m.txt.tmp", ".n.txt.dynet-unfinished-save-1-2-3"}));
  TextFileSaver(path("ref.txt")).save(g.m);
  EXPECT_EQ(read_file(path("m.txt")), read_file(path("ref.txt")));
  // safetensors saves clean up the same way.
  tmp_.write(".s.st.dynet-unfinished-save-7-0-0", "stale");
  save_safetensors(path("s.st"), g.m);
  EXPECT_TRUE(temporaries_of(tmp_.dir(), "s.st").empty());
}

TEST_F(IoTest, SaveInProgressKeepsItsTemporaryWhileAnotherSaveCleansUp) {
  Golden g;
  // A writer that is still running (here: in this process) holds its temporary locked.
  io_detail::AtomicFileWriter running(path("m.txt"), "test");
  running.write("partial");
  ASSERT_EQ(temporaries_of(tmp_.dir(), "m.txt").size(), 1u);
  TextFileSaver(path("m.txt")).save(g.m);
  ASSERT_EQ(temporaries_of(tmp_.dir(), "m.txt").size(), 1u);
  running.write(" and complete\n");
  running.commit();
  EXPECT_EQ(read_file(path("m.txt")), "partial and complete\n");
  EXPECT_TRUE(temporaries_of(tmp_.dir(), "m.txt").empty());
}

TEST_F(IoTest, UnwritableDirectoryFailsAtConstruction) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  Golden g;
  TextFileSaver(path("m.txt")).save(g.m);
  const std::string before = read_file(path("m.txt"));
  fs::permissions(tmp_.dir(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  EXPECT_THROW((void)TextFileSaver(path("m.txt")), std::runtime_error);
  EXPECT_THROW(save_safetensors(path("m.safetensors"), g.m), std::runtime_error);
  fs::permissions(tmp_.dir(), fs::perms::owner_all, fs::perm_options::add);
  EXPECT_EQ(read_file(path("m.txt")), before);
}

TEST_F(IoTest, SaveAndLoadDynetModelHelpers) {
  Random a;
  save_dynet_model(path("d.txt"), &a.m);
  Sentinel b;
  load_dynet_model(path("d.txt"), &b.m);
  EXPECT_TRUE(same_bits(snapshot(a.m), snapshot(b.m)));
}

// ---------------------------------------------------------------------------------------------
// safetensors


TEST_F(IoTest, SafetensorsLayout) {
  Golden g;
  save_safetensors(path("g.safetensors"), g.m);
  const std::string bytes = read_file(path("g.safetensors"));
  const uint64_t n = header_length(bytes);
  EXPECT_EQ(n % 8, 0u);
  std::string header = bytes.substr(8, n);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  EXPECT_EQ(header,
            "{\"__metadata__\":{\"format\":\"dynet\"},"
            "\"/W\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
            "\"/_0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
            "\"/E\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[32,56]}}");
  ASSERT_EQ(bytes.size(), 8 + n + 56);
  // W = [[0.5, 2, -3.5], [-1.25, 0.75, 1024]] row-major; E rows {1,2}, {3,4}, {5,6}
  EXPECT_EQ(floats_at(bytes, 8 + n, 6), (std::vector<float>{0.5f, 2.f, -3.5f, -1.25f, 0.75f, 1024.f}));
  EXPECT_EQ(floats_at(bytes, 8 + n + 24, 2)[0], 0.1f);
  EXPECT_EQ(floats_at(bytes, 8 + n + 32, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(IoTest, SafetensorsThreeDimensionalParameterIsRowMajor) {
  ParameterCollection m;
  std::vector<float> v(24);
  for (int k = 0; k < 24; ++k) v[k] = float(k);  // value = column-major index i + 2j + 6k
  m.add_parameters({2, 3, 4}, ParameterInitFromVector(v), "t");
  save_safetensors(path("t.safetensors"), m);
  const std::string bytes = read_file(path("t.safetensors"));
  const auto data = floats_at(bytes, 8 + header_length(bytes), 24);
  for (unsigned i = 0; i < 2; ++i)
    for (unsigned j = 0; j < 3; ++j)
      for (unsigned k = 0; k < 4; ++k) EXPECT_EQ(data[(i * 3 + j) * 4 + k], float(i + 2 * j + 6 * k));
  ParameterCollection back;
  Parameter t = back.add_parameters({2, 3, 4}, "t");
  load_safetensors(path("t.safetensors"), back);
  EXPECT_EQ(values_of(t.get_storage()), v);
}

TEST_F(IoTest, SafetensorsRoundTrip) {
  Random a;
  save_safetensors(path("a.safetensors"), a.m);
  Sentinel b;
  b.m.get_storage().params[0]->accumulate_grad(Tensor({3, 4}, std::vector<float>(12, 1.f).data()));
  load_safetensors(path("a.safetensors"), b.m);
  for (size_t i = 0; i < a.m.get_storage().params.size(); ++i) {
    EXPECT_EQ(values_of(*a.m.get_storage().params[i]), values_of(*b.m.get_storage().params[i]));
    EXPECT_FALSE(b.m.get_storage().params[i]->nonzero_grad);
  }
  for (size_t i = 0; i < a.m.get_storage().lookup_params.size(); ++i)
    EXPECT_EQ(values_of(*a.m.get_storage().lookup_params[i]), values_of(*b.m.get_storage().lookup_params[i]));
  save_safetensors(path("b.safetensors"), b.m);
  EXPECT_EQ(read_file(path("a.safetensors")), read_file(path("b.safetensors")));
  // a subcollection loads from the whole model's file (its names are full names)
  ParameterCollection other;
  ParameterCollection sub = other.add_subcollection("layer");
  Parameter bias = sub.add_parameters({5}, "bias");
  LookupParameter emb = sub.add_lookup_parameters(4, {2, 3}, "emb");
  load_safetensors(path("a.safetensors"), sub);
  EXPECT_EQ(values_of(bias.get_storage()), values_of(*a.m.get_storage().params[1]));
  EXPECT_EQ(values_of(emb.get_storage()), values_of(*a.m.get_storage().lookup_params[0]));
}

TEST_F(IoTest, SafetensorsMismatchesThrowAndStayUnchanged) {
  Random a;
  save_safetensors(path("a.safetensors"), a.m);
  {
    Sentinel s;
    s.m.add_parameters({1}, "extra");
    const auto before = snapshot(s.m);
    EXPECT_THROW(load_safetensors(path("a.safetensors"), s.m), std::runtime_error);  // no tensor /extra
    EXPECT_TRUE(same_bits(snapshot(s.m), before));
  }
  {
    ParameterCollection m;
    m.add_parameters({4, 3});  // transposed shape
    const auto before = snapshot(m);
    try {
      load_safetensors(path("a.safetensors"), m);
      FAIL();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("[3,4]"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_bits(snapshot(m), before));
  }
  {  // a hand-made file: another dtype, escaped names, metadata
    std::string header =
        "{\"/a\\u0041\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
        "\"__metadata__\":{\"k\":\"v\"}}";
    std::string bytes(8, '\0');
    bytes[0] = static_cast<char>(header.size());
    bytes += header + std::string(4, '\0');
    write_file(path("h.safetensors"), bytes);
    ParameterCollection m;
    m.add_parameters({2}, "aA");
    try {
      load_safetensors(path("h.safetensors"), m);
      FAIL();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("F16"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_safetensors(path("missing.safetensors"), a.m), std::runtime_error);
}

TEST_F(IoTest, SafetensorsTruncatedOrCorruptedNeverCrashesOrHalfUpdates) {
  Random a;
  save_safetensors(path("a.safetensors"), a.m);
  const std::string full = read_file(path("a.safetensors"));
  auto load = [&](ParameterCollection& m) { load_safetensors(path("t.safetensors"), m); };
  for (size_t n = 0; n < full.size(); ++n) {
    bool ok;
    expect_all_or_nothing(path("t.safetensors"), full.substr(0, n), load, &ok);
    ASSERT_FALSE(ok) << "truncated to " << n;
  }
  const size_t data_begin = 8 + header_length(full);
  size_t loaded = 0, failed = 0;
  std::mt19937 rng(3);
  for (size_t pos = 0; pos < full.size(); pos += (pos < data_begin ? 1 : 7)) {
    for (int t = 0; t < 4; ++t) {
      std::string bad = full;
      const char r = t == 0 ? char(bad[pos] ^ 0x01) : t == 1 ? '"' : t == 2 ? '9' : char(rng());
      if (r == bad[pos]) continue;
      bad[pos] = r;
      bool ok;
      expect_all_or_nothing(path("t.safetensors"), bad, load, &ok);
      (ok ? loaded : failed)++;
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_GT(loaded, 0u);  // flipped data bytes are just other numbers
  // a header length pointing far past the end
  std::string huge = full;
  huge[6] = 1;
  bool ok;
  expect_all_or_nothing(path("t.safetensors"), huge, load, &ok);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace dynet
