// DYNET_CLONES compiles a kernel for AVX-512, AVX2+FMA and the baseline ISA and picks one at load time
// (target_clones): the library is built for the baseline (-march=native is opt-in), so Eigen and plain
// loops would otherwise run at SSE2 width.
//
// target_clones resolves through an IFUNC at load time, before the sanitizer runtimes are set up
// (ThreadSanitizer crashes before main); sanitizer builds configure -DDYNET_ISA_CLONES=OFF and get
// the baseline version only.
#pragma once

#ifdef DYNET_NO_ISA_CLONES
#define DYNET_CLONES
#else
#define DYNET_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
