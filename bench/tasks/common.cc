#include "common.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "dynet/init.h"
#include "kernels/device/emulated.h"

namespace bench {

namespace {

int parse_int(const char* program, const char* flag, const char* text) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > 1000000000L)
    throw std::invalid_argument(std::string(program) + ": " + flag + " needs a non-negative integer, got '" + text +
                                "'");
  return static_cast<int>(v);
}

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open data file '" + path + "'");
  return in;
}

std::vector<std::string> split_spaces(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

Options parse_options(const char* program, int argc, char** argv, bool needs_data) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(std::string(program) + ": unknown or incomplete argument '" + a + "'");
    const char* v = argv[++i];
    if (!std::strcmp(a, "--data")) o.data_dir = v;
    else if (!std::strcmp(a, "--steps")) o.steps = parse_int(program, a, v);
    else if (!std::strcmp(a, "--warmup")) o.warmup = parse_int(program, a, v);
    else if (!std::strcmp(a, "--minibatch")) o.minibatch = static_cast<unsigned>(parse_int(program, a, v));
    else if (!std::strcmp(a, "--seed")) o.seed = static_cast<unsigned>(parse_int(program, a, v));
    else if (!std::strcmp(a, "--threads")) o.threads = parse_int(program, a, v);
    else if (!std::strcmp(a, "--update-batch")) o.update_batch = static_cast<unsigned>(parse_int(program, a, v));
    else if (!std::strcmp(a, "--mpi")) o.mpi = parse_int(program, a, v) != 0;
    else if (!std::strcmp(a, "--workers")) o.workers = static_cast<unsigned>(parse_int(program, a, v));
    else if (!std::strcmp(a, "--own-trainers")) o.own_trainers = parse_int(program, a, v) != 0;
    else if (!std::strcmp(a, "--exclusive-updates")) o.exclusive_updates = parse_int(program, a, v) != 0;
    else if (!std::strcmp(a, "--dev")) o.dev = static_cast<unsigned>(parse_int(program, a, v));
    else if (!std::strcmp(a, "--autobatch")) o.autobatch = parse_int(program, a, v);
    else if (!std::strcmp(a, "--manual")) o.manual = parse_int(program, a, v) != 0;
    else if (!std::strcmp(a, "--profiling")) o.profiling = parse_int(program, a, v);
    else if (!std::strcmp(a, "--device")) {
      if (std::strcmp(v, "cpu") && std::strcmp(v, "gpu") && std::strcmp(v, "emu"))
        throw std::invalid_argument(std::string(program) + ": --device takes cpu, gpu or emu, got '" + v + "'");
      o.device = v;
    }
    else throw std::invalid_argument(std::string(program) + ": unknown argument '" + a + "'");
  }
  if (needs_data && o.data_dir.empty()) throw std::invalid_argument(std::string(program) + ": --data DIR is required");
  if (o.minibatch == 0) throw std::invalid_argument(std::string(program) + ": --minibatch must be at least 1");
  if (o.threads == 0) throw std::invalid_argument(std::string(program) + ": --threads must be at least 1");
  if (o.update_batch == 0) throw std::invalid_argument(std::string(program) + ": --update-batch must be at least 1");
  if (o.workers == 0) throw std::invalid_argument(std::string(program) + ": --workers must be at least 1");
  if (o.workers > 1 && (o.mpi || o.update_batch > 1 || o.autobatch))
    throw std::invalid_argument(std::string(program) +
                                ": --workers > 1 trains one example per update; it takes no --mpi, --update-batch or --autobatch");
  if (o.autobatch > 2) throw std::invalid_argument(std::string(program) + ": --autobatch takes 0, 1 or 2");
  return o;
}

void initialize_library(const Options& options) {
  dynet::DynetParams params;
  params.random_seed = options.seed;
  params.autobatch = options.autobatch;
  params.profiling = options.profiling;
  if (options.device == "gpu") {  // by name, as --dynet-devices GPU:0: a count would fall back to the CPU
    params.devices_requested = true;
    params.device_list = {"GPU:0"};
    params.gpu_mask = {1};
    params.requested_gpus = 1;
  }
  dynet::initialize(params);
  if (options.device == "emu") dynet::default_device = dynet::emulated_device();
  omp_set_num_threads(options.threads);
}

void reject_manual(const Options& options, const char* program) {
  if (options.manual)
    throw std::invalid_argument(std::string(program) + ": this task has no hand-batched version (--manual 1)");
}

std::string data_kind(const std::string& dir) {
  return std::filesystem::exists(std::filesystem::path(dir) / "GENERATED") ? "generated" : "real";
}

double minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_minflt);
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

dynet::DeviceCounters device_counters() {
  dynet::DeviceCounters sum;
  for (const dynet::Device* d : dynet::get_device_manager()->get_devices())
    if (d->type != dynet::DeviceType::CPU) sum += d->counters();
  return sum;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

unsigned Vocab::add(const std::string& word) {
  auto [it, inserted] = ids_.emplace(word, static_cast<unsigned>(words_.size()));
  if (inserted) words_.push_back(word);
  return it->second;
}

unsigned Vocab::get(const std::string& word, unsigned unk) const {
  auto it = ids_.find(word);
  return it == ids_.end() ? unk : it->second;
}

std::vector<std::vector<std::string>> read_token_lines(const std::string& path) {
  std::ifstream in = open_input(path);
  std::vector<std::vector<std::string>> lines;
  std::string line;
  while (std::getline(in, line)) {
    auto tokens = split_spaces(line);
    if (!tokens.empty()) lines.push_back(std::move(tokens));
  }
  return lines;
}

std::vector<TaggedSentence> read_tagged(const std::string& path) {
  std::ifstream in = open_input(path);
  std::vector<TaggedSentence> out;
  std::string line;
  while (std::getline(in, line)) {
    auto tokens = split_spaces(line);
    if (tokens.empty()) continue;
    TaggedSentence s;
    for (const std::string& t : tokens) {
      size_t bar = t.rfind('|');
      if (bar == std::string::npos || bar == 0)
        throw std::runtime_error("read_tagged: token '" + t + "' in " + path + " is not word|TAG");
      s.words.push_back(t.substr(0, bar));
      s.tags.push_back(t.substr(bar + 1));
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Recursive-descent reader of one bracketed tree; appends nodes in post-order.
class TreeReader {
 public:
  TreeReader(const std::string& line, const std::string& path) : line_(line), path_(path) {}

  Tree read() {
    Tree tree;
    skip_spaces();
    node(tree);
    skip_spaces();
    if (pos_ != line_.size()) fail("text after the tree");
    return tree;
  }

 private:
  int node(Tree& tree) {
    expect('(');
    TreeNode n;
    std::string label = token();
    char* end = nullptr;
    n.label = static_cast<int>(std::strtol(label.c_str(), &end, 10));
    if (label.empty() || *end != '\0') fail("label '" + label + "' is not an integer");
    skip_spaces();
    if (peek() == '(') {
      n.left = node(tree);
      skip_spaces();
      if (peek() != '(') fail("an internal node needs two children");
      n.right = node(tree);
      skip_spaces();
    } else {
      n.word = token();
      if (n.word.empty()) fail("empty leaf");
      skip_spaces();
    }
    expect(')');
    tree.push_back(std::move(n));
    return static_cast<int>(tree.size()) - 1;
  }
  std::string token() {
    skip_spaces();
    size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '(' && line_[pos_] != ')') ++pos_;
    return line_.substr(start, pos_ - start);
  }
  void skip_spaces() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\r')) ++pos_;
  }
  char peek() const { return pos_ < line_.size() ? line_[pos_] : '\0'; }
  void expect(char c) {
    skip_spaces();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("read_trees: " + what + " at column " + std::to_string(pos_) + " of a line in " + path_);
  }

  const std::string& line_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Tree> read_trees(const std::string& path) {
  std::ifstream in = open_input(path);
  std::vector<Tree> trees;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find('(') == std::string::npos) continue;
    trees.push_back(TreeReader(line, path).read());
  }
  return trees;
}

std::vector<DepSentence> read_conllu(const std::string& path) {
  std::ifstream in = open_input(path);
  std::vector<DepSentence> out;
  DepSentence cur;
  std::string line;
  auto flush = [&] {
    if (!cur.words.empty()) out.push_back(std::move(cur));
    cur = DepSentence{};
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, '\t')) cols.push_back(col);
    if (cols.size() != 10) throw std::runtime_error("read_conllu: a line of " + path + " does not have 10 columns");
    if (cols[0].find_first_of("-.") != std::string::npos) continue;  // multiword range or empty node
    cur.words.push_back(cols[1]);
    cur.tags.push_back(cols[3]);
    cur.heads.push_back(std::atoi(cols[6].c_str()));
    cur.labels.push_back(cols[7].substr(0, cols[7].find(':')));
  }
  flush();
  return out;
}

// ---- generated data ----
namespace {

// Ranks 0..n-1 with P(rank r) ∝ 1 / (r + 1)^s: word frequencies of natural text.
class Zipf {
 public:
  Zipf(unsigned n, double s) : cdf_(n) {
    double total = 0;
    for (unsigned r = 0; r < n; ++r) cdf_[r] = (total += 1.0 / std::pow(r + 1.0, s));
    for (double& c : cdf_) c /= total;
  }
  unsigned operator()(std::mt19937_64& rng) const {
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    return static_cast<unsigned>(std::min<size_t>(it - cdf_.begin(), cdf_.size() - 1));
  }

 private:
  std::vector<double> cdf_;
};

// Sentence lengths: a gamma distribution with the corpus's mean and spread, clamped.
unsigned draw_length(std::mt19937_64& rng, double mean, double stddev, unsigned lo, unsigned hi) {
  double shape = (mean * mean) / (stddev * stddev);
  std::gamma_distribution<double> gamma(shape, mean / shape);
  long n = std::lround(gamma(rng));
  return static_cast<unsigned>(std::clamp<long>(n, lo, hi));
}

unsigned draw_weighted(std::mt19937_64& rng, const std::vector<double>& weights) {
  std::discrete_distribution<unsigned> d(weights.begin(), weights.end());
  return d(rng);
}

// A pronounceable-ish lowercase stem plus the rank, so forms are unique and have characters to read.
std::string word_form(std::mt19937_64& rng, unsigned rank) {
  static const char* kLetters = "etaoinshrdlcumwfgypbvkjxqz";
  unsigned len = 2 + static_cast<unsigned>(rng() % 7);
  std::string s;
  for (unsigned i = 0; i < len; ++i) s += kLetters[std::min<uint64_t>(rng() % 26, rng() % 26)];
  return s + std::to_string(rank);
}

std::ofstream open_output(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path);
  if (!out) throw std::runtime_error("generate_dataset: cannot write '" + path.string() + "'");
  return out;
}

unsigned scaled(double n, double scale) { return std::max(1u, static_cast<unsigned>(std::lround(n * scale))); }

void generate_ptb(const std::filesystem::path& dir, double scale, std::mt19937_64& rng) {
  // ptb.train.txt: 42,068 sentences, 887,521 tokens, 9,999 types.
  Zipf zipf(9999, 1.0);
  std::ofstream out = open_output(dir / "ptb" / "ptb.train.txt");
  for (unsigned s = 0, n = scaled(42068, scale); s < n; ++s) {
    unsigned len = draw_length(rng, 21.1, 10.2, 1, 82);
    for (unsigned i = 0; i < len; ++i) out << " w" << zipf(rng);
    out << " \n";
  }
}

void generate_tagging(const std::filesystem::path& dir, double scale, std::mt19937_64& rng) {
  // wikiner.train.txt: 10,000 sentences, 248,038 tokens, 25,719 types, IOB1 tags mostly O.
  const unsigned types = 25719;
  Zipf zipf(types, 1.0);
  const std::vector<std::string> tags = {"O", "I-PER", "I-LOC", "I-MISC", "I-ORG"};
  const std::vector<double> tag_weights = {86.3, 4.6, 3.8, 3.6, 1.8};
  std::vector<std::string> forms(types);
  std::vector<unsigned> tag_of(types);
  for (unsigned r = 0; r < types; ++r) {
    forms[r] = word_form(rng, r);
    tag_of[r] = r < 100 ? 0 : draw_weighted(rng, tag_weights);  // frequent words are function words
    if (tag_of[r] != 0) forms[r][0] = static_cast<char>(forms[r][0] - 'a' + 'A');
  }
  std::ofstream out = open_output(dir / "tagging" / "wikiner.train.txt");
  for (unsigned s = 0, n = scaled(10000, scale); s < n; ++s) {
    unsigned len = draw_length(rng, 24.8, 13.0, 1, 150);
    for (unsigned i = 0; i < len; ++i) {
      unsigned w = zipf(rng);
      out << (i ? " " : "") << forms[w] << '|' << tags[tag_of[w]];
    }
    out << '\n';
  }
}

void generate_sst(const std::filesystem::path& dir, double scale, std::mt19937_64& rng) {
  // train.txt: 8,544 binary trees, 163,563 leaves, 18,280 types, 5 sentiment classes.
  const unsigned types = 18280;
  Zipf zipf(types, 1.0);
  std::vector<double> word_sentiment(types);
  for (double& v : word_sentiment) v = static_cast<double>(draw_weighted(rng, {5, 15, 60, 15, 5}));
  std::ofstream out = open_output(dir / "sst" / "train.txt");
  // Returns the subtree's mean word sentiment; writes "(label ...)" with label = its rounding.
  std::function<double(unsigned, std::string&)> subtree = [&](unsigned leaves, std::string& text) -> double {
    if (leaves == 1) {
      unsigned w = zipf(rng);
      double v = word_sentiment[w];
      text += "(" + std::to_string(std::lround(v)) + " s" + std::to_string(w) + ")";
      return v;
    }
    unsigned left = 1 + static_cast<unsigned>(rng() % (leaves - 1));
    std::string l, r;
    double v = (subtree(left, l) * left + subtree(leaves - left, r) * (leaves - left)) / leaves;
    text += "(" + std::to_string(std::lround(v)) + " " + l + " " + r + ")";
    return v;
  };
  for (unsigned s = 0, n = scaled(8544, scale); s < n; ++s) {
    std::string text;
    subtree(draw_length(rng, 19.1, 9.0, 1, 56), text);
    out << text << '\n';
  }
}

void generate_ud(const std::filesystem::path& dir, double scale, std::mt19937_64& rng) {
  // en_ewt-ud-train.conllu: 12,544 sentences, 204,577 words, 19,674 types, 17 UPOS, 36 base relations.
  const unsigned types = 19674, n_tags = 17, n_labels = 36;
  Zipf zipf(types, 1.0);
  std::vector<unsigned> tag_of(types);
  for (unsigned& t : tag_of) t = static_cast<unsigned>(std::min(rng() % n_tags, rng() % n_tags));
  std::vector<double> label_weights(n_labels);
  for (unsigned l = 0; l < n_labels; ++l) label_weights[l] = 1.0 / (l + 1);
  std::ofstream out = open_output(dir / "ud-ewt" / "en_ewt-ud-train.conllu");
  for (unsigned s = 0, n = scaled(12544, scale); s < n; ++s) {
    unsigned len = draw_length(rng, 16.3, 12.0, 1, 150);
    std::vector<int> head(len + 1, 0);
    // A random projective tree: the span [lo, hi) hangs from `parent` through a random root m.
    std::function<void(unsigned, unsigned, int)> attach = [&](unsigned lo, unsigned hi, int parent) {
      if (lo >= hi) return;
      unsigned m = lo + static_cast<unsigned>(rng() % (hi - lo));
      head[m] = parent;
      attach(lo, m, static_cast<int>(m));
      attach(m + 1, hi, static_cast<int>(m));
    };
    attach(1, len + 1, 0);
    out << "# sent_id = generated-" << s << '\n';
    for (unsigned i = 1; i <= len; ++i) {
      unsigned w = zipf(rng);
      unsigned label = head[i] == 0 ? 0 : 1 + draw_weighted(rng, label_weights) % (n_labels - 1);
      std::string deprel = label == 0 ? "root" : "rel" + std::to_string(label);
      if (label % 7 == 3) deprel += ":sub";  // subtyped relations, as UD has (acl:relcl, ...)
      out << i << "\tu" << w << "\t_\tTAG" << tag_of[w] << "\t_\t_\t" << head[i] << '\t' << deprel << "\t_\t_\n";
    }
    out << '\n';
  }
}

}  // namespace

void generate_dataset(const std::string& dir, double scale, uint64_t seed) {
  if (!(scale > 0)) throw std::invalid_argument("generate_dataset: scale must be positive");
  std::filesystem::path root(dir);
  std::mt19937_64 rng(seed);
  generate_ptb(root, scale, rng);
  generate_tagging(root, scale, rng);
  generate_sst(root, scale, rng);
  generate_ud(root, scale, rng);
  std::ofstream marker = open_output(root / "GENERATED");
  marker << "Generated by bench_gendata (scale " << scale << ", seed " << seed
         << "): the layout and statistics of ../shared/data, random words.\n";
}

void print_result(const Result& r) {
  auto per_step = [&r](uint64_t n) { return r.steps > 0 ? double(n) / r.steps : 0.0; };
  std::printf(
      "{\"task\": \"%s\", \"impl\": \"ours-cpp\", \"minibatch\": %u, \"steps\": %d, \"warmup\": %d, "
      "\"units\": %.0f, \"unit\": \"%s\", \"seconds\": %.6f, \"throughput\": %.3f, \"loss\": %.6f, "
      "\"loss_unit\": \"%s\", \"peak_rss_mb\": %.1f, \"minor_faults_per_step\": %.1f, \"data\": \"%s\", "
      "\"threads\": %d, \"update_batch\": %u, \"ranks\": %d, \"reduce_seconds\": %.6f, \"reduce_wait_seconds\": %.6f, "
      "\"update_seconds\": %.6f, \"workers\": %u, \"own_trainers\": %s, \"exclusive_updates\": %s, \"dev_examples\": %d, \"dev_loss\": %.6f, "
      "\"autobatch\": %d, \"manual\": %s, \"cpu_seconds\": %.6f, \"launches_per_step\": %.1f, "
      "\"syncs_per_step\": %.1f, \"uploads_per_step\": %.1f, \"downloads_per_step\": %.1f, \"wait_ms_per_step\": %.3f, "
      "\"nodes_per_step\": %.1f, \"host_ns_per_node\": %.1f}\n",
      r.task.c_str(), r.minibatch, r.steps, r.warmup, r.units, r.unit.c_str(), r.seconds,
      r.seconds > 0 ? r.units / r.seconds : 0.0, r.loss_count > 0 ? r.loss_sum / r.loss_count : 0.0,
      r.loss_unit.c_str(), peak_rss_mb(), r.steps > 0 ? r.minor_faults / r.steps : 0.0, r.data.c_str(), r.threads,
      r.update_batch, r.ranks, r.reduce_seconds, r.reduce_wait_seconds, r.update_seconds, r.workers,
      r.own_trainers ? "true" : "false", r.exclusive_updates ? "true" : "false", r.dev_examples, r.dev_loss_count > 0 ? r.dev_loss_sum / r.dev_loss_count : 0.0,
      r.autobatch, r.manual ? "true" : "false", r.cpu_seconds, per_step(r.device_work.launches),
      per_step(r.device_work.syncs), per_step(r.device_work.uploads), per_step(r.device_work.downloads),
      per_step(r.device_work.wait_ns) * 1e-6, r.steps > 0 ? r.nodes / r.steps : 0.0,
      r.nodes > 0 ? (r.seconds * 1e9 - double(r.device_work.wait_ns)) / r.nodes : 0.0);
  std::fflush(stdout);
}

}  // namespace bench
