// The op registry: every op is one OpDef (shape rule, forward, backward, batch rule, test samples),
// defined side by side in its src/ops/ file and registered by a static initialiser there, which gives the
// op its id:
//   const OpId k_my_op = register_op({.name = "my_op", .shape = ..., .forward = ..., ...});
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "dynet/dynet.h"

namespace dynet {

class MemPool;
struct LowRankSink;  // kernels/cpu/low_rank.h
struct OpSample;     // ops/sample.h: the op harness's test cases

// Read-only view of a node's attribute words.
struct AttrView {
  const uint64_t* p = nullptr;
  uint32_t words = 0;
  template <class T>
  const T& as() const {
    return *reinterpret_cast<const T*>(p);
  }
  // Trailing array stored after a header struct H.
  template <class T, class H>
  const T* tail() const {
    constexpr size_t off = (sizeof(H) + 7) / 8;
    return reinterpret_cast<const T*>(p + off);
  }
};

// Dims of a node's arguments, straight from the graph (no copy).
struct ArgDims {
  const NodeRec* nodes;
  const VariableIndex* idx;
  unsigned n;
  const Dim& operator[](unsigned i) const { return nodes[idx[i]].dim; }
  unsigned size() const { return n; }
};

struct ForwardArgs {
  const Tensor* xs;  // argument values
  unsigned n;
  Tensor& fx;        // output, allocated unless the op sets kAliasOutput
  AttrView attr;
  float* aux;        // aux_floats() floats kept until backward
  MemPool& scratch;  // temporary memory, released after the call
  unsigned members = 1;  // nodes computed at once (autobatching): fx holds them one after another
  const float* const* member_xs = nullptr;  // BatchRule::by_pointer batches (see there)
};

struct BackwardArgs {
  const Tensor* xs;
  unsigned n;
  const Tensor& fx;
  const Tensor& dEdf;
  unsigned i;     // which argument
  Tensor& dEdxi;  // accumulate: dEdxi += d f / d xi · dEdf
  AttrView attr;
  float* aux;
  MemPool& scratch;
  const LowRankSink* low_rank = nullptr;  // set when dEdxi may take deferred rank-1 updates
  // An earlier call of this backward pass (for another argument of the same node) already ran, so what
  // the op wrote into aux during that call is current. Executors that cannot tell leave it false.
  bool repeat = false;
  unsigned members = 1;                   // as in ForwardArgs
  bool overwrite = false;  // dEdxi holds no value yet (not even zeros): write (=) all of it
  float* const* member_dx = nullptr;  // BatchRule::by_pointer batches (see there)
  uint64_t reached = 0;  // bit j (j < 64): argument j gets its call in this pass (in argument order); 0: unknown
  // OpDef::partial_gradient: write (=) the op's quarters of every column of dEdxi and leave the other rows as
  // they are (garbage until their own writer comes; the executor zeroes them if something else does first).
  bool own_quarters = false;
};

// How same-signature nodes run as one batched node (DyNet's autobatching, arXiv 1705.07860). The
// batched node's output and its concatenated arguments hold the members' batch elements one member
// after another (batch is the slowest axis), so the op's ordinary multi-batch kernel computes every
// member at once. Arguments whose bit is set in `shared` (bit i%64) are one unbatched node for every
// member (e.g. the W of W*x) and are passed once. Kernels read an argument with fewer batch elements
// than the output as equal blocks (src/ops/common.h's arg_batch), so that a member whose own argument is
// unbatched and whose output is batched still reads the right values among concatenated members.
//
// Two nodes share a signature when op, key attribute words, their own dim, the dims of their
// concatenated arguments and the identity of their shared arguments are equal (src/exec/signature.h;
// compared exactly, hashed only to bucket). Attribute words are compared as bytes, so attribute
// structs must have no padding (the harness checks every sample for it).
struct BatchRule {
  bool batchable = false;
  uint64_t shared = 0;
  // Required when not batchable: why the op's nodes run alone (listed in docs/ops.md).
  const char* why_not = nullptr;
  // Per-instance payload (DyNet's pseudo node: lookup rows, pick indices, input values): `key` writes the
  // attribute words that must agree into `out` (at most a.words of them) and returns their count, or
  // kRunsAlone when this node cannot join a batch; `merge` appends to `out` the attribute words of one
  // node that computes all k members (e.g. their indices one after another; pointer forms read now).
  // Without `key` every attribute word must agree and member 0's attributes serve the batched node.
  static constexpr uint32_t kRunsAlone = ~0u;
  uint32_t (*key)(AttrView a, uint64_t* out) = nullptr;
  void (*merge)(const AttrView* members, unsigned k, const Dim& member_dim, std::vector<uint64_t>& out) = nullptr;
  // A batchable parameter node (kParameterNode) must keep its members' aux memory one after another
  // (each as long as aux_floats gives for the member), so that one member's gradient can be pushed alone.
  // by_pointer: the kernels (every device's) take a batch's concatenated arguments member by member (none gathered
  // or scattered): member j's argument i at ForwardArgs::member_xs[i * members + j] (dim xs[i].d, bd / members);
  // backward runs once for all of them, adding into BackwardArgs::member_dx[i * members + j] (null: shared, or
  // off the loss's path). Those xs[i].v are null. For ops that move each value once (concatenate).
  bool by_pointer = false;
  bool is_shared(unsigned i) const { return (shared >> (i & 63)) & 1; }
};

enum OpFlags : uint16_t {
  kAliasOutput = 1,     // forward sets fx.v itself (parameters, reshape): no output allocation
  kRandom = 2,          // draws random numbers in forward (the harness reseeds before each forward)
  kParameterNode = 4,   // gradient goes to a parameter after backward (see OpDef::param_grad)
  kNoGradient = 8,      // output is constant with respect to the arguments
  kObjectAttr = 16,     // the attribute is an object the graph owns (a user Node): unique to its node
  kToDevice = 32,       // runs on the device add_node is given, not on its argument's (to_device)
  kOverwritesGradient = 64,  // the CPU backward honours BackwardArgs::overwrite (which executors may set)
  // Set by the graph on a node, never in an OpDef: the node's value or an argument's has no elements
  // (executors skip kernels for values without elements; see OpDef::takes_empty).
  kHasEmpty = 128,
  // On devices, a node's backward runs once for all its arguments, adding into BackwardArgs::member_dx[k ·
  // members + j] (argument k's gradient of member j, alone: members 1; null: none), BackwardArgs::i the
  // first that gets one: one launch for a sum of a graph's losses, not one per term. A batch calls it so
  // only when every member's argument has the member's batch size (none repeated) and none is shared.
  kGradientsInOneCall = 256,
};

struct OpDef {
  const char* name = nullptr;
  const char* doc = nullptr;  // the math in one line, e.g. "y = tanh(x)" (docs/ops.md is generated from it)
  // Output dim; throws std::invalid_argument naming the op and the offending dims.
  Dim (*shape)(const ArgDims& xs, AttrView a) = nullptr;
  void (*forward)(const ForwardArgs&) = nullptr;
  void (*backward)(const BackwardArgs&) = nullptr;  // null: zero gradient
  size_t (*aux_floats)(const Dim& fx, const ArgDims& xs, AttrView a) = nullptr;
  // For kParameterNode ops: push the node's gradient into the parameter storage (aux: the node's
  // aux memory from forward, e.g. the indices a lookup read).
  void (*param_grad)(AttrView a, const Tensor& dEdf, const float* aux) = nullptr;
  BatchRule batch = {};
  std::vector<OpSample> (*samples)() = nullptr;
  uint16_t flags = 0;
  // Why the op runs on the CPU only, by design (no device kernels); a handful at most (test_devices.cc).
  const char* cpu_only = nullptr;
  // An op whose gradient into argument `arg` fills only some rows of each column, which another op's
  // fills the rest of (an LSTM cell: vanilla_lstm_h's the gates' o block, vanilla_lstm_c's i, f and g):
  // bit q of `quarters` stands for rows [q·R/4, (q+1)·R/4) of R. Where both write into a batch's
  // gradient that nothing else touched, neither writes zeros over the other's rows (BackwardArgs::
  // own_quarters). Needs kOverwritesGradient.
  struct PartialGradient {
    uint8_t arg = 0, quarters = 0;
  } partial_gradient = {};
  // The op computes a value with elements from arguments without any (a product with an inner dimension
  // of 0 is zeros, a sum over nothing 0; DyNet programs meet them through parameters of width 0). Other
  // ops refuse such arguments where the value would have elements; a value without elements is never
  // computed (no kernel runs for it), so any op may make one.
  bool takes_empty = false;
  // The op's value may have no elements where its arguments have some (select_rows of no rows). Every other
  // op's shape rule refuses to make one from arguments with elements (the harness checks its samples), so
  // the graph looks for values without elements only at leaves and at these ops.
  bool makes_empty = false;
  // What describe_node prints between the node's parentheses instead of its arguments (a parameter's name).
  const std::string& (*label)(AttrView a) = nullptr;
};

extern std::vector<OpDef> g_op_registry;
std::vector<OpDef>& op_registry();
OpId register_op(const OpDef& def);
inline const OpDef& op_def(OpId id) { return g_op_registry[id]; }
// The id of a registered op by name (throws if unknown).
OpId op_id(const std::string& name);

// ---- helpers for op definitions ----

namespace detail {
// x is a current node of graph g with id `id` and `size` nodes (not stale, not reverted away).
// g must be known live (detail::graph_is_live) before its size is read.
inline bool is_node_of(const Expression& x, const ComputationGraph* g, uint64_t id, size_t size) {
  return x.pg == g && x.graph_id == id && x.i < size;
}
// Throws unless every expression is live and on one graph (naming the op); returns that graph.
ComputationGraph& graph_of(const char* op, std::initializer_list<const Expression*> xs);
ComputationGraph& graph_of(const char* op, const Expression* const* xs, size_t n);
ComputationGraph& graph_of(const char* op, const Expression* xs, size_t n);
}  // namespace detail

namespace detail {
// Attribute words are compared and hashed as bytes (signatures, autobatching), so the padding of an
// attribute struct must not carry whatever the stack held: every struct is cleaned here on its way
// into a node. (Compilers without __builtin_clear_padding rely on the structs' explicit padding
// fields; OpHarness.Signature builds every sample over differently scribbled stacks.)
template <class A>
A& zero_padding(A& a) {
  static_assert(std::is_trivially_copyable_v<A>, "attributes are stored as bytes");
#if defined(__has_builtin)
#if __has_builtin(__builtin_clear_padding)
  __builtin_clear_padding(&a);
#endif
#endif
  return a;
}
}  // namespace detail

// Builds a node from live expressions with an optional POD attribute struct.
template <class A = std::nullptr_t>
inline Expression make_node(OpId op, std::initializer_list<const Expression*> xs, const A* attr = nullptr) {
  const Expression* x0 = *xs.begin();
  ComputationGraph* g = x0->pg;
  const uint64_t id = x0->graph_id;
  VariableIndex args[8];
  unsigned n = 0;
  bool live = g != nullptr && detail::graph_is_live(id);
  if (live) {
    const size_t size = g->size();
    for (const Expression* x : xs) {
      live = live && detail::is_node_of(*x, g, id, size);
      args[n++] = x->i;
    }
  }
  if (!live) detail::graph_of(op_def(op).name, xs);  // throws the precise error
  if constexpr (std::is_same_v<A, std::nullptr_t>)
    return Expression(g, g->add_node(op, args, n));
  else {
    A clean = *attr;
    return Expression(g, g->add_node(op, args, n, &detail::zero_padding(clean), sizeof(A)));
  }
}
inline Expression make_node(OpId op, const Expression& x) { return make_node(op, {&x}); }
inline Expression make_node(OpId op, const Expression& x, const Expression& y) { return make_node(op, {&x, &y}); }
template <class A>
inline Expression make_node(OpId op, const Expression& x, const A& attr) {
  return make_node(op, {&x}, &attr);
}
// Variadic ops: any number of arguments (no heap allocation up to 16) plus raw attribute bytes.
Expression make_node_n(OpId op, const Expression* xs, size_t n, const void* attr = nullptr, size_t bytes = 0);
inline Expression make_node_n(OpId op, const std::vector<Expression>& xs, const void* attr = nullptr,
                              size_t bytes = 0) {
  return make_node_n(op, xs.data(), xs.size(), attr, bytes);
}
inline Expression make_node_n(OpId op, std::initializer_list<Expression> xs, const void* attr = nullptr,
                              size_t bytes = 0) {
  return make_node_n(op, xs.begin(), xs.size(), attr, bytes);
}

// Attribute blob = POD header followed by an array (e.g. the indices of a batched pick), zero-padded
// to whole words. Blobs of up to kInlineWords words (a header and a few indices) live on the stack,
// so creating such a node allocates nothing.
template <class H, class T>
class AttrWithTail {
 public:
  static constexpr size_t kHeadWords = (sizeof(H) + 7) / 8;
  static constexpr size_t kInlineWords = kHeadWords + 4;
  AttrWithTail(const H& h, const T* data, size_t n) : words_(kHeadWords + (n * sizeof(T) + 7) / 8) {
    if (words_ > kInlineWords) heap_.resize(words_, 0);
    uint64_t* w = heap_.empty() ? small_ : heap_.data();
    H clean = h;
    std::memcpy(w, &detail::zero_padding(clean), sizeof(H));
    if (n) std::memcpy(w + kHeadWords, data, n * sizeof(T));
  }
  const uint64_t* data() const { return heap_.empty() ? small_ : heap_.data(); }
  size_t size() const { return words_; }  // in words
  size_t bytes() const { return words_ * sizeof(uint64_t); }

 private:
  size_t words_;
  uint64_t small_[kInlineWords] = {};
  std::vector<uint64_t> heap_;
};
template <class H, class T>
AttrWithTail<H, T> attr_with_tail(const H& h, const T* data, size_t n) {
  return AttrWithTail<H, T>(h, data, n);
}

// Appends to attribute words `out` a header struct followed by room for n values of T (the layout
// attr_with_tail makes) and returns where the values go: for BatchRule::merge hooks.
template <class T, class H>
T* append_attr(std::vector<uint64_t>& out, const H& h, size_t n) {
  constexpr size_t head = (sizeof(H) + 7) / 8;
  const size_t at = out.size();
  out.resize(at + head + (n * sizeof(T) + 7) / 8, 0);
  H clean = h;
  std::memcpy(out.data() + at, &detail::zero_padding(clean), sizeof(H));
  return reinterpret_cast<T*>(out.data() + at + head);
}
// A BatchRule::key for ops whose attributes are all per-instance payload: nothing must agree (the
// node's own dim is part of every signature).
inline uint32_t no_key(AttrView, uint64_t*) { return 0; }

// A one-argument node whose attribute struct is followed by n indices (stored inline when `ids` is
// given; otherwise the struct alone, e.g. when it holds a pointer read at forward time).
template <class A>
Expression make_node_with_ids(OpId op, const Expression& x, const A& attr, const unsigned* ids, size_t n) {
  if (!ids) return make_node(op, x, attr);
  const auto blob = attr_with_tail(attr, ids, n);
  return make_node_n(op, &x, 1, blob.data(), blob.bytes());
}

// Error helper: "<op>: <message>" as std::invalid_argument.
[[noreturn]] void op_error(const char* op, const std::string& msg);

}  // namespace dynet
