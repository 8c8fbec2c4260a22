#include "exec/fusion.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/device.h"
#include "exec/batched.h"
#include "exec/profile.h"
#include "kernels/cpu/clones.h"
#include "kernels/cpu/exp.h"
#include "kernels/device/prims.h"

namespace dynet {
namespace fusion {

namespace {
struct OpTable {
  OpId logistic, tanh, cmult, add, pick, lstm_c, lstm_h;
};
const OpTable& op_table() {
  static const OpTable t{op_id("logistic"), op_id("tanh"),           op_id("cmult"),         op_id("cwise_sum"),
                         op_id("pick_range"), op_id("vanilla_lstm_c"), op_id("vanilla_lstm_h")};
  return t;
}
// pick_range's attribute (ops/select.cc): s, e, axis.
struct PickRange {
  uint32_t s, e, axis;
};
}  // namespace

namespace {
DeviceFusion g_device_fusion[kNumBackends];
}  // namespace

void register_device_fusion(Backend backend, DeviceForward forward, DeviceBackward backward) {
  g_device_fusion[backend] = {forward, backward};
}
const DeviceFusion* device_fusion(Backend backend) {
  return g_device_fusion[backend].forward ? &g_device_fusion[backend] : nullptr;
}
DeviceProgram device_program(const Program& p) {
  DeviceProgram d;
  d.n = p.n;
  d.nodes = static_cast<uint16_t>(p.code.size());
  d.inputs = static_cast<uint16_t>(p.inputs());
  std::copy(p.code.begin(), p.code.end(), d.code);
  return d;
}

int kind_of(const ComputationGraph& cg, VariableIndex i) {
  const NodeRec& r = cg.node(i);
  if (r.dim.bd != 1 || (r.flags & kHasEmpty)) return -1;
  if (r.device && !device_fusion(backend_of(r.device))) return -1;
  const OpTable& t = op_table();
  const size_t n = r.dim.size();
  const VariableIndex* a = cg.node_args(i);
  auto same = [&](unsigned k) {
    const NodeRec& x = cg.node(a[k]);
    return x.device == r.device && x.dim.bd == 1 && x.dim.size() == n;
  };
  if (r.op == t.logistic || r.op == t.tanh) return r.nargs == 1 && same(0) ? (r.op == t.tanh ? kTanh : kLogistic) : -1;
  if (r.op == t.cmult || r.op == t.add)
    return r.nargs == 2 && same(0) && same(1) ? (r.op == t.add ? kAdd : kCmult) : -1;
  // A cell's c and h on a device: one launch each way for both, their arguments read where they lie (the CPU
  // keeps its cell kernels, vectorized across the batch, and their batches' gradient recycling).
  if (r.op == t.lstm_c || r.op == t.lstm_h) {
    const NodeRec& gates = cg.node(a[1]);
    if (r.device && same(0) && gates.device == r.device && gates.dim.bd == 1 && gates.dim.size() == 4 * n)
      return r.op == t.lstm_c ? kLstmC : kLstmH;
    return -1;
  }
  if (r.op == t.pick && r.nargs == 1 && r.attr_words * sizeof(uint64_t) >= sizeof(PickRange)) {
    PickRange p;
    std::memcpy(&p, cg.node_attr(i), sizeof p);
    const NodeRec& x = cg.node(a[0]);
    // A slice of a column vector is contiguous: read in place.
    if (p.axis == 0 && x.device == r.device && x.dim.bd == 1 && x.dim.size() == x.dim.d[0]) return kPick;
  }
  return -1;
}

// ---- Programs ----

namespace {
// The inputs that picks alone read, their slices tiling the input exactly (a cell's gates): the region's
// backward writes every element of such an input's gradient exactly once.
uint64_t tiled_inputs(const Program& p) {
  uint64_t tiled = 0;
  std::vector<std::pair<uint32_t, uint32_t>> slices;
  for (unsigned q = 0; q < p.inputs() && q < 64; ++q) {
    slices.clear();
    bool direct = false;
    for (const Instr& in : p.code) {
      if (in.kind == kPick) {
        if (in.a == (kInput | q)) slices.push_back({in.offset, in.offset + p.n});
      } else {
        direct = direct || in.a == (kInput | q) || (has_b(in.kind) && in.b == (kInput | q));
      }
    }
    std::sort(slices.begin(), slices.end());
    uint32_t end = 0;
    for (const auto& [b, e] : slices) end = b == end ? e : ~0u;
    if (!direct && !slices.empty() && end == p.input_sizes[q]) tiled |= uint64_t(1) << q;
  }
  return tiled;
}
}  // namespace

void Programs::words(const Program& p, std::vector<uint64_t>& out) const {
  out.clear();
  out.push_back(p.n);
  out.push_back(uint64_t(p.code.size()) << 32 | p.input_sizes.size());
  for (const Instr& in : p.code)
    out.push_back(uint64_t(in.kind) | uint64_t(in.output) << 8 | uint64_t(in.a) << 16 | uint64_t(in.b) << 32 |
                  uint64_t(in.offset & 0xffff) << 48);
  for (const Instr& in : p.code)
    if (in.kind == kPick) out.push_back(in.offset);
  for (uint32_t s : p.input_sizes) out.push_back(s);
}

uint32_t Programs::intern(const Program& p) {
  words(p, key_);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t w : key_) h = (h ^ w) * 0x100000001b3ull;
  if (slots_.size() < 2 * programs_.size() + 16) {
    // Rehashed at half load.
    slots_.assign(std::max<size_t>(64, 4 * programs_.size() + 32), -1);
    for (uint32_t id = 0; id < programs_.size(); ++id) {
      uint64_t g = 0x9e3779b97f4a7c15ull;
      for (uint32_t w = begin_[id]; w < begin_[id + 1]; ++w) g = (g ^ words_[w]) * 0x100000001b3ull;
      size_t s = g % slots_.size();
      while (slots_[s] >= 0) s = (s + 1) % slots_.size();
      slots_[s] = static_cast<int32_t>(id);
    }
  }
  size_t s = h % slots_.size();
  for (; slots_[s] >= 0; s = (s + 1) % slots_.size()) {
    const uint32_t id = static_cast<uint32_t>(slots_[s]);
    if (begin_[id + 1] - begin_[id] == key_.size() && std::equal(key_.begin(), key_.end(), words_.begin() + begin_[id]))
      return id;
  }
  const uint32_t id = static_cast<uint32_t>(programs_.size());
  if (begin_.empty()) begin_.push_back(0);
  words_.insert(words_.end(), key_.begin(), key_.end());
  begin_.push_back(static_cast<uint32_t>(words_.size()));
  programs_.push_back(p);
  programs_.back().tiled = tiled_inputs(p);
  slots_[s] = static_cast<int32_t>(id);
  return id;
}

void Programs::clear() {
  programs_.clear();
  words_.clear();
  begin_.clear();
  slots_.clear();
}

// ---- Plan ----

uint32_t Plan::find(uint32_t s) {
  while (sets_[s].parent != s) s = sets_[s].parent = sets_[sets_[s].parent].parent;
  return s;
}

// Regions grow in creation order: a fusable node joins the regions of its fusable arguments (of its own
// element count) when the union stays convex, else fewer of them, else starts its own. Convex: every
// external input of a region (an uncomputed argument from outside) was created before the region's first
// node. Creation order is a topological order, so no path leaves such a region and comes back (its
// nodes would lie between the region's first node and the input), and edges between regions go from an
// earlier first node to a later one: the regions schedule as units without cycles. A node's `ext` counts
// inputs that a later merge may make internal: conservative, it can only refuse a merge.
void Plan::build(const ComputationGraph& cg, const std::vector<VariableIndex>& nodes,
                 const std::vector<uint32_t>& local, const std::vector<uint8_t>& computed, Programs& programs) {
  const size_t span = nodes.size();
  regions_.clear();
  inputs_.clear();
  outputs_.clear();
  sets_.clear();
  region_of_.assign(span, -1);
  uses_.assign(span, 0);
  kind_.resize(span);
  // An uncomputed argument of a listed node is listed too (nodes holds all that the last one needs).
  auto live = [&](VariableIndex x) { return !computed[x]; };
  // uses_: consumers among the nodes this pass computes; the requested node is used by its reader. A
  // consumer outside the pass (later, or not needed now) finds an intermediate uncomputed and computes
  // it then.
  ++uses_[span - 1];
  for (size_t i = 0; i < span; ++i) {
    const VariableIndex y = nodes[i];
    const NodeRec& r = cg.node(y);
    const VariableIndex* a = cg.node_args(y);
    for (unsigned k = 0; k < r.nargs; ++k)
      if (live(a[k])) ++uses_[local[a[k]]];
    const int kind = kind_[i] = static_cast<int8_t>(kind_of(cg, y));
    if (kind < 0) continue;
    const uint32_t n = static_cast<uint32_t>(r.dim.size());
    uint32_t cand[2];
    unsigned nc = 0;
    if (kind != kPick)
      for (unsigned k = 0; k < r.nargs; ++k) {
        const VariableIndex x = a[k];
        if (!live(x) || region_of_[local[x]] < 0) continue;
        const uint32_t s = find(static_cast<uint32_t>(region_of_[local[x]]));
        if (sets_[s].n == n && (nc == 0 || cand[0] != s)) cand[nc++] = s;
      }
    auto join = [&](const uint32_t* sets, unsigned ns) {
      uint32_t first = y, ext = 0, count = 1;
      for (unsigned q = 0; q < ns; ++q) {
        const Set& s = sets_[sets[q]];
        first = std::min(first, s.first);
        ext = std::max(ext, s.ext);
        count += s.count;
      }
      for (unsigned k = 0; k < r.nargs; ++k) {
        const VariableIndex x = a[k];
        if (!live(x)) continue;
        bool inside = false;
        if (kind != kPick && region_of_[local[x]] >= 0) {
          const uint32_t sx = find(static_cast<uint32_t>(region_of_[local[x]]));
          for (unsigned q = 0; q < ns; ++q) inside = inside || sx == sets[q];
        }
        if (!inside) ext = std::max(ext, uint32_t(x) + 1);
      }
      if (ns > 0 && (ext > first || count > kMaxNodes)) return false;
      uint32_t root;
      if (ns == 0) {
        root = static_cast<uint32_t>(sets_.size());
        sets_.push_back(Set{root, first, ext, count, n});
      } else {
        root = sets[0];
        for (unsigned q = 1; q < ns; ++q) sets_[sets[q]].parent = root;
        sets_[root] = Set{root, first, ext, count, n};
      }
      region_of_[i] = static_cast<int32_t>(root);
      return true;
    };
    if (nc == 2 && join(cand, 2)) continue;
    if (nc >= 1 && join(cand, 1)) continue;
    if (nc == 2 && join(cand + 1, 1)) continue;
    join(nullptr, 0);
  }
  if (sets_.empty()) return;
  // Sets of two or more nodes become regions, numbered by first node; their members in creation order.
  std::vector<uint32_t>& id = inside_;  // reused below for the counts of uses inside the region
  id.assign(sets_.size(), ~0u);
  member_begin_.clear();
  for (size_t i = 0; i < span; ++i) {
    if (region_of_[i] < 0) continue;
    const uint32_t s = find(static_cast<uint32_t>(region_of_[i]));
    if (sets_[s].count < 2) {
      region_of_[i] = -1;
      continue;
    }
    if (id[s] == ~0u) {
      id[s] = static_cast<uint32_t>(member_begin_.size());
      member_begin_.push_back(0);
    }
    region_of_[i] = static_cast<int32_t>(id[s]);
    ++member_begin_[id[s]];
  }
  const size_t nregions = member_begin_.size();
  if (nregions == 0) return;
  uint32_t at = 0;
  for (uint32_t& b : member_begin_) {
    const uint32_t c = b;
    b = at;
    at += c;
  }
  member_begin_.push_back(at);
  members_.resize(at);
  std::vector<uint32_t>& fill = slot_;
  fill.assign(member_begin_.begin(), member_begin_.end() - 1);
  for (size_t i = 0; i < span; ++i)
    if (region_of_[i] >= 0) members_[fill[region_of_[i]]++] = nodes[i];
  inside_.assign(span, 0);
  slot_.assign(span, 0);
  regions_.resize(nregions);
  Program& p = scratch_;
  for (uint32_t rg = 0; rg < nregions; ++rg) {
    const uint32_t* m = members_.data() + member_begin_[rg];
    const uint32_t count = member_begin_[rg + 1] - member_begin_[rg];
    Region& R = regions_[rg];
    R = Region{};
    R.first = m[0];
    R.inputs = static_cast<uint32_t>(inputs_.size());
    R.outputs = static_cast<uint32_t>(outputs_.size());
    p.n = static_cast<uint32_t>(cg.node(m[0]).dim.size());
    p.code.resize(count);
    p.input_sizes.clear();
    p.outputs = 0;
    for (uint32_t s = 0; s < count; ++s) slot_[local[m[s]]] = s;
    for (uint32_t s = 0; s < count; ++s) {
      const VariableIndex y = m[s];
      const NodeRec& r = cg.node(y);
      const VariableIndex* a = cg.node_args(y);
      Instr& in = p.code[s];
      in = Instr{};
      in.kind = static_cast<uint8_t>(kind_[local[y]]);
      for (unsigned k = 0; k < r.nargs; ++k) {
        const VariableIndex x = a[k];
        uint16_t ref;
        if (in.kind != kPick && live(x) && region_of_[local[x]] == int32_t(rg)) {
          ref = static_cast<uint16_t>(slot_[local[x]]);
          ++inside_[local[x]];
        } else {
          uint32_t q = 0;
          while (R.inputs + q < inputs_.size() && inputs_[R.inputs + q] != x) ++q;
          if (R.inputs + q == inputs_.size()) {
            inputs_.push_back(x);
            p.input_sizes.push_back(static_cast<uint32_t>(cg.node(x).dim.size()));
          }
          ref = static_cast<uint16_t>(kInput | q);
        }
        (k == 0 ? in.a : in.b) = ref;
      }
      if (in.kind == kPick) {
        PickRange pr;
        std::memcpy(&pr, cg.node_attr(y), sizeof pr);
        in.offset = pr.s;
      }
    }
    for (uint32_t s = 0; s < count; ++s) {
      const VariableIndex y = m[s];
      // A cell's c is kept even where nothing outside reads it (a sequence's last step): its region is then
      // the same program as the other steps', and batches with them.
      if (uses_[local[y]] > inside_[local[y]] || p.code[s].kind == kLstmC) {
        p.code[s].output = true;
        ++p.outputs;
        outputs_.push_back(y);
      }
    }
    R.program = programs.intern(p);
  }
}

// ---- The interpreter ----
// Each member's region runs a chunk of kChunk floats at a time through every instruction, so that the
// intermediates stay in L1; each instruction is a plain loop the compiler vectorizes (DYNET_CLONES:
// AVX-512, AVX2+FMA or the baseline, as the unfused σ and tanh kernels).

namespace {
constexpr unsigned kChunk = 128;

[[gnu::always_inline]] inline void run_op(uint8_t kind, const float* __restrict x, const float* __restrict z,
                                          float* __restrict y, size_t len) {
  switch (kind) {
    case kLogistic:
      for (size_t t = 0; t < len; ++t) y[t] = cpu::logistic_clamped(x[t]);
      break;
    case kTanh:
      for (size_t t = 0; t < len; ++t) y[t] = cpu::tanh_clamped(x[t]);
      break;
    case kCmult:
      for (size_t t = 0; t < len; ++t) y[t] = x[t] * z[t];
      break;
    case kAdd:
      for (size_t t = 0; t < len; ++t) y[t] = x[t] + z[t];
      break;
    default:  // kPick, materialized as an output
      for (size_t t = 0; t < len; ++t) y[t] = x[t];
  }
}

// The members' memory lies apart (their inputs come from different batches and examples): member
// j + 1's is requested while member j runs, or each of its streams starts with a cache miss.
[[gnu::always_inline]] inline void prefetch(const float* p, size_t n, bool write = false) {
  if (!p) return;
  for (size_t t = 0; t < n; t += 16)
    if (write)
      __builtin_prefetch(p + t, 1);
    else
      __builtin_prefetch(p + t);
}

[[gnu::always_inline]] inline void add_to(float* __restrict d, const float* __restrict g, size_t len) {
  for (size_t t = 0; t < len; ++t) d[t] += g[t];
}
}  // namespace

DYNET_CLONES void forward(const Program& p, unsigned k, const float* const* in, float* out) {
  const unsigned nodes = static_cast<unsigned>(p.code.size()), nin = p.inputs();
  const size_t n = p.n;
  alignas(64) float buf[kMaxNodes][kChunk];
  const float* at[kMaxNodes];
  for (unsigned j = 0; j < k; ++j) {
    const float* const* x = in + size_t(j) * nin;
    if (j + 1 < k)
      for (unsigned q = 0; q < nin; ++q) prefetch(x[nin + q], p.input_sizes[q]);
    for (size_t c = 0; c < n; c += kChunk) {
      const size_t len = std::min<size_t>(kChunk, n - c);
      auto arg = [&](uint16_t ref) { return ref & kInput ? x[ref & ~kInput] + c : at[ref]; };
      unsigned o = 0;
      for (unsigned s = 0; s < nodes; ++s) {
        const Instr& I = p.code[s];
        float* y = I.output ? out + (size_t(o++) * k + j) * n + c : buf[s];
        if (I.kind == kPick) {
          const float* src = x[I.a & ~kInput] + I.offset + c;
          if (!I.output) {
            at[s] = src;
            continue;
          }
          run_op(kPick, src, nullptr, y, len);
        } else {
          run_op(I.kind, arg(I.a), I.kind >= kCmult ? arg(I.b) : nullptr, y, len);
        }
        at[s] = y;
      }
    }
  }
}

DYNET_CLONES void backward(const Program& p, unsigned k, const float* const* in, const float* out,
                           float* const* out_grad, float* const* in_grad, const uint8_t* live,
                           const Capture* capture, const uint64_t* overwrite) {
  const unsigned nodes = static_cast<unsigned>(p.code.size()), nin = p.inputs();
  const size_t n = p.n;
  alignas(64) float val[kMaxNodes][kChunk];
  alignas(64) float grad[kMaxNodes][kChunk];
  const float* at[kMaxNodes];
  float* gat[kMaxNodes];
  for (unsigned j = capture ? capture->member : 0; j < (capture ? capture->member + 1 : k); ++j) {
    if (!live[j]) continue;
    const float* const* x = in + size_t(j) * nin;
    float* const* dx = in_grad + size_t(j) * nin;
    for (unsigned j1 = j + 1; !capture && j1 < k; ++j1) {
      if (!live[j1]) continue;
      for (unsigned q = 0; q < nin; ++q) {
        prefetch(x[(j1 - j) * nin + q], p.input_sizes[q]);
        prefetch(dx[(j1 - j) * nin + q], p.input_sizes[q], true);
      }
      for (unsigned o = 0; o < p.outputs; ++o) {
        prefetch(out + (size_t(o) * k + j1) * n, n);
        prefetch(out_grad[size_t(o) * k + j1], n, true);
      }
      break;
    }
    for (size_t c = 0; c < n; c += kChunk) {
      const size_t len = std::min<size_t>(kChunk, n - c);
      auto arg = [&](uint16_t ref) { return ref & kInput ? x[ref & ~kInput] + c : at[ref]; };
      // Values: the outputs' from the output block, the intermediates recomputed. Gradients: the
      // outputs' accumulate in place (their own gradients then include their consumers inside the
      // region), the intermediates' in chunk buffers.
      // An intermediate's first contribution is written, not added (`fresh`): every intermediate has
      // one, from its consumers inside the region.
      uint64_t fresh = 0;
      unsigned o = 0;
      for (unsigned s = 0; s < nodes; ++s) {
        const Instr& I = p.code[s];
        gat[s] = grad[s];
        if (I.output) {
          const size_t t = size_t(o++) * k + j;
          at[s] = out + t * n + c;
          if (out_grad[t])
            gat[s] = out_grad[t] + c;
          else
            std::fill_n(grad[s], kChunk, 0.f);
          continue;
        }
        fresh |= uint64_t(1) << s;
        if (I.kind == kPick) {
          at[s] = x[I.a & ~kInput] + I.offset + c;
          continue;
        }
        run_op(I.kind, arg(I.a), I.kind >= kCmult ? arg(I.b) : nullptr, val[s], len);
        at[s] = val[s];
      }
      // The reverse sweep: a slot's gradient is complete when reached (its consumers come after it).
      // When capturing, the outputs' gradients are complete already (accumulated by the backward pass).
      auto dst = [&](uint16_t ref) -> float* {
        if (!(ref & kInput)) return capture && p.code[ref].output ? nullptr : gat[ref];
        if (capture || !dx[ref & ~kInput]) return nullptr;
        return dx[ref & ~kInput] + c;
      };
      auto first = [&](uint16_t ref) {
        if (ref & kInput || !(fresh >> ref & 1)) return false;
        fresh &= ~(uint64_t(1) << ref);
        return true;
      };
#define DYNET_CONTRIBUTE(REF, EXPR)                                 \
  if (float* __restrict d = dst(REF)) {                             \
    if (first(REF))                                                 \
      for (size_t t = 0; t < len; ++t) d[t] = (EXPR);               \
    else                                                            \
      for (size_t t = 0; t < len; ++t) d[t] += (EXPR);              \
  }
      for (unsigned s = nodes; s-- > 0;) {
        const Instr& I = p.code[s];
        const float* __restrict g = gat[s];
        if (capture && s == capture->slot) {
          std::memcpy(capture->to + c, g, len * sizeof(float));
          break;
        }
        switch (I.kind) {
          case kPick:
            if (float* __restrict d = capture || !dx[I.a & ~kInput] ? nullptr : dx[I.a & ~kInput] + I.offset + c) {
              if (overwrite && overwrite[j] >> (I.a & ~kInput) & 1)
                std::memcpy(d, g, len * sizeof(float));
              else
                add_to(d, g, len);
            }
            break;
          case kLogistic: {
            const float* __restrict y = at[s];
            DYNET_CONTRIBUTE(I.a, g[t] * y[t] * (1.f - y[t]))
            break;
          }
          case kTanh: {
            const float* __restrict y = at[s];
            DYNET_CONTRIBUTE(I.a, g[t] * (1.f - y[t] * y[t]))
            break;
          }
          case kCmult: {
            const float* __restrict xa = arg(I.a);
            const float* __restrict xb = arg(I.b);
            DYNET_CONTRIBUTE(I.a, g[t] * xb[t])
            DYNET_CONTRIBUTE(I.b, g[t] * xa[t])
            break;
          }
          case kAdd:
            DYNET_CONTRIBUTE(I.a, g[t])
            DYNET_CONTRIBUTE(I.b, g[t])
            break;
        }
      }
#undef DYNET_CONTRIBUTE
    }
  }
}

}  // namespace fusion

// ---- The batched executor's side (declared in batched.h) ----

void BatchedExecutor::run_position(uint32_t t) {
  if (info_[t].region != kNone) return run_fused(&t, 1);
  run_alone(info_[t].node);
}

// k regions of one program as one batch: the outputs in one block, output after output and in each the
// members one after another (a batched node's layout, so consumers see views as they would of k
// batched nodes); the inputs read where they lie. The batch's members, in order_, are the outputs in
// that order; args_ keeps each member's input nodes for backward.
void BatchedExecutor::run_fused(const uint32_t* group, unsigned k) {
  const fusion::Region& r0 = plan_.region(info_[group[0]].region);
  const fusion::Program& p = programs_[r0.program];
  const unsigned nin = p.inputs(), nout = p.outputs;
  const size_t n = p.n;
  // Members in the order of their largest input's memory (as run_group orders a batch): the gates of a
  // batch of cells then come from one batch in its order, and their gradients are one view (below).
  unsigned key = 0;
  for (unsigned q = 1; q < nin; ++q)
    if (p.input_sizes[q] > p.input_sizes[key]) key = q;
  if (k > 1 && nin > 0) {
    order_keys_.resize(k);
    for (unsigned j = 0; j < k; ++j)
      order_keys_[j] = {value_ptr_[plan_.inputs(plan_.region(info_[group[j]].region))[key]], info_[group[j]].node, j};
    auto before = [](const OrderKey& x, const OrderKey& y) { return x.at != y.at ? x.at < y.at : x.node < y.node; };
    if (!std::is_sorted(order_keys_.begin(), order_keys_.end(), before)) {
      std::sort(order_keys_.begin(), order_keys_.end(), before);
      fused_order_.resize(k);
      for (unsigned j = 0; j < k; ++j) fused_order_[j] = group[order_keys_[j].index];
      group = fused_order_.data();
    }
  }
  const VariableIndex out0 = plan_.outputs(r0)[0];
  const uint8_t device = cg_->node(out0).device;
  profile::Scope scope(profile::Phase::kForward, cg_->node(out0).op, k, &run_ns_);
  scope.set_gathered(0, &cg_->node(out0).dim);
  MemPool& pool = fx_pool(device);
  const MemPool::Mark mark = pool.mark();
  Batch g;
  g.first = static_cast<uint32_t>(order_.size());
  g.size = nout * k;
  g.xs = static_cast<uint32_t>(xs_.size());
  g.args = static_cast<uint32_t>(args_.size());
  g.attr = static_cast<uint32_t>(attr_.size());
  g.program = r0.program;
  try {
    float* out = pool.allocate_floats(size_t(nout) * k * n);
    fused_in_.resize(size_t(k) * nin);
    for (unsigned j = 0; j < k; ++j) {
      const VariableIndex* x = plan_.inputs(plan_.region(info_[group[j]].region));
      for (unsigned q = 0; q < nin; ++q) {
        args_.push_back(x[q]);
        fused_in_[size_t(j) * nin + q] = value_ptr_[x[q]];
      }
    }
    if (device) {
      Device* dev = detail::device_at(device);
      const PoolScope scratch(scratch_pool(device));
      fusion::MemberArray<const float> in;
      if (!fusion::strided(fused_in_.data(), k, nin, in))
        in.list = dev::upload(dev, scratch_pool(device), fused_in_.data(), fused_in_.size());
      fusion::device_fusion(backend_of(device))->forward(dev, fusion::device_program(p), k, in, out);
    } else {
      fusion::forward(p, k, fused_in_.data(), out);
    }
    if (cg_->check_validity() &&
        !Tensor(Dim({static_cast<unsigned>(size_t(nout) * k * n)}), out, detail::device_at(device), DeviceMempool::FXS)
             .is_valid())
      throw std::runtime_error("NaN or Inf detected in the value of node " + std::to_string(out0) + " (" +
                               op_def(cg_->node(out0).op).name + ", computed in a fused region with " +
                               std::to_string(k - 1) + " others)");
    for (unsigned o = 0; o < nout; ++o)
      for (unsigned j = 0; j < k; ++j) {
        const VariableIndex v = plan_.outputs(plan_.region(info_[group[j]].region))[o];
        value_ptr_[v] = out + (size_t(o) * k + j) * n;
        mark_computed(v, kUnwrittenRecord);
      }
  } catch (...) {
    args_.resize(g.args);
    pool.revert(mark);
    throw;
  }
  batches_.push_back(g);
}

void BatchedExecutor::backward_fused(const Batch& g) {
  if (!g.grad) return;
  const fusion::Program& p = programs_[g.program];
  const unsigned nin = p.inputs(), nout = p.outputs, k = g.size / nout;
  const size_t n = p.n;
  const VariableIndex* m = members(g);
  profile::Scope scope(profile::Phase::kBackward, cg_->node(m[0]).op, k, nullptr, &cg_->node(m[0]).dim);
  zero_before_use(g.grad, size_t(g.size) * n);
  fused_live_.assign(k, 0);
  fused_out_grad_.resize(g.size);
  for (uint32_t t = 0; t < g.size; ++t) {
    fused_out_grad_[t] = nullptr;
    if (!reached_at(m[t])) continue;
    if (low_rank_head_[m[t]] >= 0) {
      gradient_record(m[t]);  // flush_low_rank reads grad_
      flush_low_rank(m[t]);
    }
    fused_out_grad_[t] = g.grad + size_t(t) * n;
    fused_live_[t % k] = 1;
  }
  fused_in_.resize(size_t(k) * nin);
  fused_dst_.resize(size_t(k) * nin);
  for (unsigned j = 0; j < k; ++j)
    for (unsigned q = 0; q < nin; ++q) {
      const VariableIndex x = args_[g.args + size_t(j) * nin + q];
      fused_in_[size_t(j) * nin + q] = value_ptr_[x];
      fused_dst_[size_t(j) * nin + q] = fused_live_[j] && reached_at(x) ? grad_ptr_[x] : nullptr;
    }
  // (A device's gradients are zeroed when allocated: nothing below applies there.)
  if (const uint8_t device = cg_->node(m[0]).device)
    return backward_fused_on_device(device, p, k, value_ptr_[m[0]], {});
  // An input that the members' picks tile (Program::tiled) and whose gradients lie one after another
  // (a view of the batch that made them, as a cell's gates usually are) is written by the region's
  // backward, not zeroed and added to, when nothing was written there yet (claim_for_overwrite).
  // The view's chunks that lie wholly inside it are claimed (claim_interior); members wholly inside
  // those write their gradients, the others (at the view's ends) add to zeroed memory.
  fused_overwrite_.assign(k, 0);
  for (unsigned q = 0; q < nin && q < 64; ++q) {
    if (!(p.tiled >> q & 1)) continue;
    const size_t size = p.input_sizes[q];
    float* const d0 = fused_dst_[q];
    bool view = d0 != nullptr;
    for (unsigned j = 1; j < k && view; ++j) view = fused_dst_[size_t(j) * nin + q] == d0 + size_t(j) * size;
    if (!view) continue;
    const auto [lo, hi] = claim_interior(d0, size_t(k) * size, size);
    for (unsigned j = 0; j < k; ++j)
      if (d0 + size_t(j) * size >= lo && d0 + size_t(j + 1) * size <= hi) fused_overwrite_[j] |= uint64_t(1) << q;
  }
  for (unsigned j = 0; j < k; ++j)
    for (unsigned q = 0; q < nin; ++q)
      if (float* d = fused_dst_[size_t(j) * nin + q]; d && !(fused_overwrite_[j] >> q & 1)) zero_before_use(d, p.input_sizes[q]);
  fusion::backward(p, k, fused_in_.data(), value_ptr_[m[0]], fused_out_grad_.data(), fused_dst_.data(),
                   fused_live_.data(), nullptr, fused_overwrite_.data());
}

// The fused backward on a device: the member arrays (fused_in_, fused_out_grad_, fused_dst_, fused_live_) that
// cannot go by value (fusion::strided; live flags all set) in one upload, then one launch.
void BatchedExecutor::backward_fused_on_device(uint8_t device, const fusion::Program& p, unsigned k, const float* out,
                                               fusion::Capture capture) {
  Device* dev = detail::device_at(device);
  fusion::MemberArray<const float> in;
  fusion::MemberArray<float> out_grad, dst;
  constexpr size_t kByValue = ~size_t(0);
  fused_upload_.clear();
  auto stage = [&](const void* data, size_t bytes) {  // its offset in the upload
    fused_upload_.insert(fused_upload_.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    return fused_upload_.size() - bytes;
  };
  auto describe = [&](auto* ptrs, size_t members, unsigned columns, auto& array) {
    return fusion::strided(ptrs, members, columns, array) ? kByValue : stage(ptrs, members * columns * sizeof(void*));
  };
  const size_t in_at = describe(fused_in_.data(), k, p.inputs(), in);
  const size_t out_at = describe(fused_out_grad_.data(), fused_out_grad_.size(), 1, out_grad);
  const size_t dst_at = describe(fused_dst_.data(), k, p.inputs(), dst);
  const bool all_live = std::all_of(fused_live_.begin(), fused_live_.end(), [](uint8_t l) { return l != 0; });
  const size_t live_at = all_live ? kByValue : stage(fused_live_.data(), k);
  MemPool& scratch = scratch_pool(device);
  const PoolScope scope(scratch);
  const uint8_t* at = fused_upload_.empty() ? nullptr : dev::upload(dev, scratch, fused_upload_.data(), fused_upload_.size());
  if (in_at != kByValue) in.list = reinterpret_cast<const float* const*>(at + in_at);
  if (out_at != kByValue) out_grad.list = reinterpret_cast<float* const*>(at + out_at);
  if (dst_at != kByValue) dst.list = reinterpret_cast<float* const*>(at + dst_at);
  fusion::device_fusion(backend_of(device))
      ->backward(dev, fusion::device_program(p), k, in, out, out_grad, dst, all_live ? nullptr : at + live_at, capture);
}

// For members' gradients one after another from p (`member` floats each, n in all): the chunks of the
// CPU gradient block that lie wholly inside [p, p + n) and are not zeroed yet (nothing was written
// there) count as zeroed from now on. Returns the members they hold wholly, whose kernels must write all
// of them; the parts of the other members inside them are zeroed here.
std::pair<float*, float*> BatchedExecutor::claim_interior(float* p, size_t n, size_t member) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), begin = reinterpret_cast<uintptr_t>(grad_block_);
  if (n == 0 || at < begin || at + n * sizeof(float) > begin + grad_floats_ * sizeof(float)) return {p, p};
  const size_t first = (at - begin) / sizeof(float);
  size_t c0 = chunks_of(first), c1 = (first + n) / kZeroChunk;  // chunks [c0, c1)
  if (first + n == grad_floats_) c1 = chunks_of(grad_floats_);  // the block's last, short one
  // The longest run of unzeroed chunks; usually all of them.
  size_t best = c0, best_len = 0;
  for (size_t c = c0; c < c1;) {
    if (zeroed_chunks_[c]) {
      ++c;
      continue;
    }
    size_t e = c;
    while (e < c1 && !zeroed_chunks_[e]) ++e;
    if (e - c > best_len) best = c, best_len = e - c;
    c = e;
  }
  if (best_len == 0) return {p, p};
  std::fill(zeroed_chunks_.begin() + best, zeroed_chunks_.begin() + best + best_len, 1);
  float* const lo = grad_block_ + best * kZeroChunk;
  float* const hi = grad_block_ + std::min((best + best_len) * kZeroChunk, grad_floats_);
  float* const lo_m = p + (size_t(lo - p) + member - 1) / member * member;
  float* const hi_m = p + size_t(hi - p) / member * member;
  if (lo_m >= hi_m) {
    std::fill(lo, hi, 0.f);
    return {p, p};
  }
  std::fill(lo, lo_m, 0.f);
  std::fill(hi_m, hi, 0.f);
  return {lo_m, hi_m};
}

void BatchedExecutor::fused_inputs_used(const Batch& b, std::vector<uint8_t>& used) const {
  const unsigned nout = programs_[b.program].outputs, nin = programs_[b.program].inputs(), k = b.size / nout;
  const VariableIndex* m = members(b);
  for (uint32_t t = 0; t < b.size; ++t)
    if (reached_at(m[t]))
      for (unsigned q = 0; q < nin; ++q) used[args_[b.args + size_t(t % k) * nin + q]] = 1;
}

// The gradient of a fused intermediate is not kept (it has no memory); asked for, it is recomputed from
// the region's inputs and its outputs' gradients. Where the node was also computed on its own later (read
// by something outside the region), its own gradient is added.
const Tensor& BatchedExecutor::gradient(VariableIndex i) {
  if (!has_backward_ || i >= backward_upto_) return ExecutorBase::gradient(i);
  if (recycled_pending_ && i < batch_of_.size() && batch_of_[i] != kNone && batches_[batch_of_[i]].recycled)
    recompute_recycled();
  if (!fused_index_ready_) index_fused_intermediates();
  auto it = std::lower_bound(fused_at_.begin(), fused_at_.end(), FusedAt{i, 0, 0, 0},
                             [](const FusedAt& a, const FusedAt& b) { return a.node < b.node; });
  if (it == fused_at_.end() || it->node != i || it->batch == kNone) return ExecutorBase::gradient(i);
  const NodeRec& r = cg_->node(i);
  const size_t n = r.dim.size();
  Device* const dev = detail::device_at(r.device);
  // On a device, in its gradient pool, the sum added up there.
  MemPool& pool = r.device ? device_pools(r.device).grad : grad_pool_;
  float* sum = pool.allocate_floats(n);
  if (grad_state_[i])
    dev->copy(sum, gradient_record(i).v, n * sizeof(float));
  else
    dev->fill(sum, n, 0.f);
  float* part = pool.allocate_floats(n);
  for (; it != fused_at_.end() && it->node == i; ++it) {
    const Batch& g = batches_[it->batch];
    const fusion::Program& p = programs_[g.program];
    const unsigned nin = p.inputs(), nout = p.outputs, k = g.size / nout;
    const VariableIndex* m = members(g);
    fused_out_grad_.assign(g.size, nullptr);
    fused_live_.assign(k, 0);
    for (uint32_t t = 0; t < g.size; ++t)
      if (reached_at(m[t])) fused_out_grad_[t] = grad_ptr_[m[t]];
    fused_live_[it->member] = 1;
    fused_in_.resize(size_t(k) * nin);
    fused_dst_.assign(size_t(k) * nin, nullptr);
    for (size_t t = 0; t < size_t(k) * nin; ++t) fused_in_[t] = value_ptr_[args_[g.args + t]];
    const fusion::Capture capture{it->member, it->slot, part};
    if (r.device) {
      backward_fused_on_device(r.device, p, k, value_ptr_[m[0]], capture);
      dev->axpy(1.f, part, sum, n);
    } else {
      fusion::backward(p, k, fused_in_.data(), value_ptr_[m[0]], fused_out_grad_.data(), fused_dst_.data(),
                       fused_live_.data(), &capture);
      for (size_t t = 0; t < n; ++t) sum[t] += part[t];
    }
    it->batch = kNone;
  }
  grad_[i] = Tensor(r.dim, sum, dev, DeviceMempool::DEDFS);
  grad_state_[i] = 1;
  return grad_[i];
}

// Every reached fused intermediate of the last backward, found by walking each member's program back
// from its outputs (every intermediate has a consumer later in its region).
void BatchedExecutor::index_fused_intermediates() {
  fused_index_ready_ = true;
  fused_at_.clear();
  VariableIndex node_of[fusion::kMaxNodes];
  for (uint32_t bi = 0; bi < batches_.size(); ++bi) {
    const Batch& g = batches_[bi];
    if (g.program == kNone || !g.grad) continue;
    const fusion::Program& p = programs_[g.program];
    const unsigned nout = p.outputs, k = g.size / nout, nodes = static_cast<unsigned>(p.code.size());
    const VariableIndex* m = members(g);
    for (unsigned j = 0; j < k; ++j) {
      bool live = false;
      unsigned o = 0;
      for (unsigned s = 0; s < nodes; ++s)
        if (p.code[s].output) {
          node_of[s] = m[size_t(o++) * k + j];
          live = live || reached_at(node_of[s]);
        }
      if (!live) continue;
      for (unsigned s = nodes; s-- > 0;) {
        const fusion::Instr& in = p.code[s];
        if (!in.output) fused_at_.push_back(FusedAt{node_of[s], bi, j, s});
        if (in.kind == fusion::kPick) continue;
        const VariableIndex* a = cg_->node_args(node_of[s]);
        if (!(in.a & fusion::kInput)) node_of[in.a] = a[0];
        if (fusion::has_b(in.kind) && !(in.b & fusion::kInput)) node_of[in.b] = a[1];
      }
    }
  }
  std::sort(fused_at_.begin(), fused_at_.end(), [](const FusedAt& a, const FusedAt& b) { return a.node < b.node; });
}

}  // namespace dynet
