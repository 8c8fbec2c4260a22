// Elementwise fusion for the batched executor: chains of elementwise nodes of one example (an LSTM
// or Tree-LSTM cell's σ, tanh, ⊙, + and the pick_range slices of its gates) are scheduled, batched and
// differentiated as one unit, a region. Only a region's outputs (nodes used outside it) get memory;
// its intermediates are computed in registers-sized chunks by an interpreter and never materialize.
// Backward recomputes the intermediates from the region's inputs and sweeps the program in reverse.
// docs/contributing/autobatching.md ("Elementwise fusion") has the rules, docs/measurements.md the figures.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/op.h"

namespace dynet::fusion {

// kLstmC: c = i ⊙ g + f ⊙ a, kLstmH: h = o ⊙ tanh(a) (vanilla_lstm_c, vanilla_lstm_h), with b an input of
// 4·n floats, the cell's gates i, f, o, g one after another; on devices only (the CPU's interpreter has none).
enum Kind : uint8_t { kLogistic, kTanh, kCmult, kAdd, kPick, kLstmC, kLstmH };
constexpr bool has_b(uint8_t kind) { return kind >= kCmult && kind != kPick; }

// One instruction per region node, in creation order; the node's slot is its instruction's index.
// Operands are slots (< kInput) or external inputs (kInput | input index); a pick reads its input at
// `offset` (a slice of a column vector, not copied), as the cell kinds read their gates.
constexpr uint16_t kInput = 0x8000;
constexpr unsigned kMaxNodes = 32;  // per region (the interpreter's chunk buffers live on the stack)
struct Instr {
  uint8_t kind = 0;
  bool output = false;  // used outside the region: written to the output block
  uint16_t a = 0, b = 0;
  uint32_t offset = 0;
};

// A region's program. Regions with equal programs (ops, wiring, element counts, input sizes) batch.
struct Program {
  uint32_t n = 0;  // floats of every node
  std::vector<Instr> code;
  std::vector<uint32_t> input_sizes;
  unsigned outputs = 0;
  uint64_t tiled = 0;  // inputs (bit q < 64) read only by picks whose slices tile them (set by intern)
  unsigned inputs() const { return static_cast<unsigned>(input_sizes.size()); }
};

// Programs interned by their words: ids stay valid until clear().
class Programs {
 public:
  uint32_t intern(const Program& p);
  const Program& operator[](uint32_t id) const { return programs_[id]; }
  size_t size() const { return programs_.size(); }
  void clear();

 private:
  void words(const Program& p, std::vector<uint64_t>& out) const;
  std::vector<Program> programs_;
  std::vector<uint64_t> words_;            // every program's words, one after another
  std::vector<uint32_t> begin_;            // program id -> its words in words_ (and end: the next one's begin)
  std::vector<int32_t> slots_;             // open addressing by hash: id or -1
  std::vector<uint64_t> key_;
};

// One region found by a scheduling pass.
struct Region {
  VariableIndex first = 0;   // its first node in creation order
  uint32_t program = 0;
  uint32_t inputs = 0;       // its external inputs: Plan::inputs, program.inputs() of them
  uint32_t outputs = 0;      // its output nodes: Plan::outputs, program.outputs of them
  uint32_t position = ~0u;   // the executor's scheduling position (set by the executor)
};

// The regions of one scheduling pass over `nodes`: the uncomputed nodes that the last of them needs, in
// creation order (local[x]: node x's index there).
class Plan {
 public:
  void build(const ComputationGraph& cg, const std::vector<VariableIndex>& nodes, const std::vector<uint32_t>& local,
             const std::vector<uint8_t>& computed, Programs& programs);
  void clear() { regions_.clear(); region_of_.clear(); }
  // The region of nodes[l], or -1.
  int32_t region_of(size_t l) const { return region_of_.empty() ? -1 : region_of_[l]; }
  Region& region(uint32_t r) { return regions_[r]; }
  const VariableIndex* inputs(const Region& r) const { return inputs_.data() + r.inputs; }
  const VariableIndex* outputs(const Region& r) const { return outputs_.data() + r.outputs; }

 private:
  struct Set {  // a region being grown (union-find)
    uint32_t parent, first, ext, count, n;
  };
  uint32_t find(uint32_t s);
  std::vector<int32_t> region_of_;  // by index in nodes: set while growing, then region
  std::vector<int8_t> kind_;        // by index in nodes: kind_of
  std::vector<uint32_t> uses_, inside_, slot_, members_, member_begin_;
  std::vector<Set> sets_;
  std::vector<Region> regions_;
  std::vector<VariableIndex> inputs_, outputs_;
  Program scratch_;
};

// The ops a region takes and how (kPick: only slices of a column vector; the cell kinds: unbatched gates), or -1.
int kind_of(const ComputationGraph& cg, VariableIndex i);

// Runs k regions of program p. in: member j's input q at in[j * inputs + q]; out: output o of member
// j at out + (o * k + j) * n.
void forward(const Program& p, unsigned k, const float* const* in, float* out);
// Backward of the same k regions: out_grad[o * k + j] is output o's gradient of member j (null: none;
// contributions of consumers inside the region are added to it),
// in_grad[j * inputs + q] where input q's gradient is accumulated (null: not wanted); members whose
// live[j] is 0 are skipped. When capture is set, slot capture_slot's gradient of member capture_member
// is written there instead (and nothing is accumulated: out_grad then holds the outputs' whole gradients).
// Member j's inputs whose bit is set in overwrite[j] (tiled ones) have their gradients written, not added to.
struct Capture {
  unsigned member = 0, slot = 0;
  float* to = nullptr;
};
void backward(const Program& p, unsigned k, const float* const* in, const float* out, float* const* out_grad,
              float* const* in_grad, const uint8_t* live, const Capture* capture = nullptr,
              const uint64_t* overwrite = nullptr);

// The same on devices other than the CPU (fused_kernels.cc): one launch each, the program passed by value, every
// array (in, out_grad, in_grad, live, capture.to) in the device's memory; input gradients are added to, never
// written (a device's gradients are zeroed when allocated). capture.to null: no capture; live null: all live.
//
// A member array holds `columns` pointers per member (in, in_grad: one per input; out_grad: one column whose
// member o · k + j is output o of member j). Where each column's pointers lie evenly apart (a batch's values or
// gradients one after another) and there are at most kByValue columns, it goes by value as base + j · stride
// (nothing uploaded); else as a list in the device's memory.
template <class T>
struct MemberArray {
  static constexpr unsigned kByValue = 8;
  T* const* list = nullptr;  // member j's column q at list[j * columns + q]; null: base[q] + j * stride[q]
  T* base[kByValue] = {};
  long stride[kByValue] = {};
  unsigned columns = 0;
};
// Fills `out` with the strided form of k members' pointers p[j * columns + q] (list null) and returns true, or
// returns false where there is none (a null pointer, uneven steps, too many columns).
template <class T>
bool strided(T* const* p, size_t k, unsigned columns, MemberArray<T>& out) {
  out.columns = columns;
  out.list = nullptr;
  if (columns > MemberArray<T>::kByValue) return false;
  const auto address = [](T* x) { return reinterpret_cast<intptr_t>(x); };
  for (unsigned q = 0; q < columns; ++q) {
    const intptr_t p0 = address(p[q]), step = k > 1 ? address(p[columns + q]) - p0 : 0;
    if (step % intptr_t(sizeof(T))) return false;
    for (size_t j = 0; j < k; ++j)
      if (!p[j * columns + q] || address(p[j * columns + q]) - p0 != intptr_t(j) * step) return false;
    out.base[q] = p[q];
    out.stride[q] = long(step / intptr_t(sizeof(T)));
  }
  return true;
}
struct DeviceProgram {
  uint32_t n = 0;
  uint16_t nodes = 0, inputs = 0;
  Instr code[kMaxNodes];
};
using DeviceForward = void (*)(Device* dev, const DeviceProgram& p, unsigned k, const MemberArray<const float>& in,
                               float* out);
using DeviceBackward = void (*)(Device* dev, const DeviceProgram& p, unsigned k, const MemberArray<const float>& in,
                                const float* out, const MemberArray<float>& out_grad, const MemberArray<float>& in_grad,
                                const uint8_t* live, Capture capture);
void register_device_fusion(Backend backend, DeviceForward forward, DeviceBackward backward);
struct DeviceFusion {
  DeviceForward forward = nullptr;
  DeviceBackward backward = nullptr;
};
// Null where the backend has no fused kernels (its nodes are then never fused).
const DeviceFusion* device_fusion(Backend backend);
DeviceProgram device_program(const Program& p);

}  // namespace dynet::fusion
