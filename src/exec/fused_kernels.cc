// The fused regions' kernels on devices other than the CPU (exec/fusion.h): a batch of regions is one launch
// forward and one backward, a thread per element of a member, which runs the whole program for it with the
// intermediates in its own registers. Compiled for the emulated device and, in CUDA builds, again by nvcc
// (cmake/cuda.cmake). The CPU runs the chunked interpreter of fusion.cc instead, vectorized across elements:
// the same math, over 128 floats a step.
#include "exec/fusion.h"
#include "kernels/device/prims.h"

namespace dynet::fusion {
namespace {

// Member j's pointers of a member array, x[q] its column q.
template <class T>
struct Member {
  const MemberArray<T>& a;
  size_t j;
  DYNET_HD T* operator[](unsigned q) const { return a.list ? a.list[j * a.columns + q] : a.base[q] + long(j) * a.stride[q]; }
};
using Inputs = Member<const float>;

// A region operand's value at element e: an input's, or an earlier slot's.
DYNET_HD inline float operand(const Inputs& x, const float* v, uint16_t ref, size_t e) {
  return ref & kInput ? x[ref & ~kInput][e] : v[ref];
}

// Slot I's value at element e, from the inputs x and the earlier slots' values v (a pick reads its slice in
// place, the cell kinds their gates' quarters, n apart).
DYNET_HD inline float evaluate(const Instr& I, const Inputs& x, const float* v, size_t e, size_t n) {
  const float a = I.kind == kPick ? x[I.a & ~kInput][I.offset + e] : operand(x, v, I.a, e);
  switch (I.kind) {
    case kLogistic:
      return fn::logistic(a);
    case kTanh:
      return fn::tanh(a);
    case kCmult:
      return a * operand(x, v, I.b, e);
    case kAdd:
      return a + operand(x, v, I.b, e);
    case kLstmC:  // (the cell kinds' b is an input)
      return x[I.b & ~kInput][e] * x[I.b & ~kInput][3 * n + e] + x[I.b & ~kInput][n + e] * a;
    case kLstmH:
      return x[I.b & ~kInput][2 * n + e] * fn::tanh(a);
    default:  // kPick
      return a;
  }
}

template <class P>
void device_forward(Device* dev, const DeviceProgram& program, unsigned k, const MemberArray<const float>& inputs,
                    float* out) {
  const DeviceProgram p = program;
  const MemberArray<const float> in = inputs;
  const size_t n = p.n;
  P::for_each(dev, size_t(k) * n, [=] DYNET_LAMBDA(size_t i) {
    const size_t j = i / n, e = i % n;
    const Inputs x{in, j};
    float v[kMaxNodes];
    unsigned o = 0;
    for (unsigned s = 0; s < p.nodes; ++s) {
      const Instr& I = p.code[s];
      v[s] = evaluate(I, x, v, e, n);
      if (I.output) out[(size_t(o++) * k + j) * n + e] = v[s];
    }
  });
}

// Each thread owns one element of one member: its outputs' gradients are its own to complete in place (their
// in-region consumers' contributions added), while inputs may be shared by members, so those are added atomically.
template <class P>
void device_backward(Device* dev, const DeviceProgram& program, unsigned k, const MemberArray<const float>& inputs,
                     const float* out, const MemberArray<float>& output_grads, const MemberArray<float>& input_grads,
                     const uint8_t* live, Capture capture) {
  const DeviceProgram p = program;
  const MemberArray<const float> in = inputs;
  const MemberArray<float> out_grad = output_grads, in_grad = input_grads;
  const size_t n = p.n;
  const unsigned first = capture.to ? capture.member : 0, members = capture.to ? 1 : k;
  P::for_each(dev, size_t(members) * n, [=] DYNET_LAMBDA(size_t i) {
    const size_t j = first + i / n, e = i % n;
    if (live && !live[j]) return;
    const Inputs x{in, j};
    const Member<float> dx{in_grad, j};
    auto dy = [&](size_t t) { return Member<float>{out_grad, t}[0]; };  // output o of member j: t = o · k + j
    float v[kMaxNodes], g[kMaxNodes];
    unsigned o = 0;
    for (unsigned s = 0; s < p.nodes; ++s) {
      const Instr& I = p.code[s];
      g[s] = 0.f;
      if (I.output) {
        const size_t t = size_t(o++) * k + j;
        v[s] = out[t * n + e];
        if (float* d = dy(t)) g[s] = d[e];
      } else {
        v[s] = evaluate(I, x, v, e, n);
      }
    }
    // When capturing, the outputs' gradients are whole already (the backward pass completed them): nothing is
    // added to them, nor to the inputs.
    auto add = [&](uint16_t ref, size_t at, float d) {
      if (!(ref & kInput)) {
        if (!capture.to || !p.code[ref].output) g[ref] += d;
      } else if (!capture.to && dx[ref & ~kInput]) {
        dev::atomic_add(dx[ref & ~kInput] + at, d);
      }
    };
    for (unsigned s = p.nodes; s-- > 0;) {
      const Instr& I = p.code[s];
      const float d = g[s];
      if (capture.to && s == capture.slot) {
        capture.to[e] = d;
        return;
      }
      switch (I.kind) {
        case kPick:
          add(I.a, I.offset + e, d);
          break;
        case kLogistic:
          add(I.a, e, d * v[s] * (1.f - v[s]));
          break;
        case kTanh:
          add(I.a, e, d * (1.f - v[s] * v[s]));
          break;
        case kCmult:
          add(I.a, e, d * operand(x, v, I.b, e));
          add(I.b, e, d * operand(x, v, I.a, e));
          break;
        case kAdd:
          add(I.a, e, d);
          add(I.b, e, d);
          break;
        case kLstmC: {
          const float* gates = x[I.b & ~kInput] + e;
          add(I.a, e, d * gates[n]);
          add(I.b, e, d * gates[3 * n]);
          add(I.b, n + e, d * operand(x, v, I.a, e));
          add(I.b, 3 * n + e, d * gates[0]);
          break;
        }
        case kLstmH: {
          const float tc = fn::tanh(operand(x, v, I.a, e));
          add(I.a, e, d * x[I.b & ~kInput][2 * n + e] * (1.f - tc * tc));
          add(I.b, 2 * n + e, d * tc);
          break;
        }
      }
    }
    o = 0;
    for (unsigned s = 0; s < p.nodes && !capture.to; ++s)
      if (p.code[s].output) {
        const size_t t = size_t(o++) * k + j;
        if (float* d = dy(t)) d[e] = g[s];
      }
  });
}

const bool kRegistered =
    (register_device_fusion(DYNET_DEVICE_PRIMS::kBackend, device_forward<DYNET_DEVICE_PRIMS>,
                            device_backward<DYNET_DEVICE_PRIMS>),
     true);

}  // namespace
}  // namespace dynet::fusion
