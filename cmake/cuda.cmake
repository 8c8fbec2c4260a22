# The CUDA backend (-DDYNET_CUDA=ON; OFF by default, the CPU build does not change with it). Included by
# the top-level CMakeLists.txt before the layers are defined. What it builds (docs/design.md, "Devices"):
#   - src/kernels/cuda/*.cu: the CUDA device (allocator, stream, cuBLAS handle, pinned staging, the
#     device primitives) registered with the core at load time;
#   - the CUDA pass: every op family file that has device kernels compiled a second time, by nvcc, with
#     DYNET_CUDA_PASS defined, which keeps only its device kernels (the host pass compiles them for the
#     emulated device). One generated .cu per file includes it, so the op's file stays the only place its
#     kernels are written.
# Sets DYNET_CUDA_OBJECTS (objects to link into libdynet) and DYNET_CUDA_LIBRARIES.
option(DYNET_CUDA "Build the CUDA backend (CUDA 13 toolkit: nvcc, the CUDA runtime and cuBLAS)" OFF)
set(DYNET_CUDA_OBJECTS "")
set(DYNET_CUDA_LIBRARIES "")
if(NOT DYNET_CUDA)
  return()
endif()

# nvcc from CMAKE_CUDA_COMPILER, CUDACXX, PATH, or the toolkit's usual place.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(DYNET_NVCC nvcc PATHS /usr/local/cuda/bin /usr/local/cuda-13.0/bin NO_CACHE)
  if(DYNET_NVCC)
    set(CMAKE_CUDA_COMPILER ${DYNET_NVCC})
  endif()
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "dynet: -DDYNET_CUDA=ON needs the CUDA 13 toolkit, but no CUDA compiler (nvcc) was found. "
                      "Install the toolkit (nvcc, cudart, cuBLAS), put nvcc on PATH or pass "
                      "-DCMAKE_CUDA_COMPILER=/path/to/nvcc; or configure with -DDYNET_CUDA=OFF for the CPU build.")
endif()
# Hopper (sm_90, with PTX so that newer GPUs can JIT it) and Ampere (sm_80); -DCMAKE_CUDA_ARCHITECTURES=...
# (or CUDAARCHS) chooses others, e.g. "native" on a machine with a GPU.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
endif()
set(CMAKE_CUDA_FLAGS_RELEASE "-O3 -DNDEBUG")
set(CMAKE_CUDA_FLAGS_RELWITHDEBINFO "-O3 -g -DNDEBUG")
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
enable_language(CUDA)
if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.0)
  message(FATAL_ERROR "dynet: -DDYNET_CUDA=ON needs CUDA 13 or newer; ${CMAKE_CUDA_COMPILER} is version "
                      "${CMAKE_CUDA_COMPILER_VERSION}")
endif()
# CMake 3.25 does not know nvcc 13's C++20 flag (targets take CXX_STANDARD 20 for CUDA too): teach it.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)
set(DYNET_CUDA_LIBRARIES CUDA::cudart CUDA::cublas)
message(STATUS "dynet: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")

# The device-neutral sources: op family files, trainer and executor code with device kernels
# (DYNET_DEVICE_KERNELS, _FORWARD, or DYNET_DEVICE_PRIMS::); the others stay host-only. Their contents decide, so a
# change to any of them re-runs the configure step.
file(GLOB op_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/ops/*.cc ${CMAKE_CURRENT_SOURCE_DIR}/src/train/*.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/exec/*.cc)
set(cuda_pass_units "")
foreach(src ${op_sources})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(STRINGS ${src} marks REGEX "DYNET_DEVICE_(KERNELS|FORWARD|PRIMS)[(:]" LIMIT_COUNT 1)
  if(NOT marks)
    continue()
  endif()
  file(RELATIVE_PATH rel ${CMAKE_CURRENT_SOURCE_DIR}/src ${src})
  string(MAKE_C_IDENTIFIER ${rel} id)
  set(unit ${CMAKE_CURRENT_BINARY_DIR}/cuda_pass/${id}.cu)
  file(CONFIGURE OUTPUT ${unit} CONTENT "// Generated (cmake/cuda.cmake): the CUDA pass of src/${rel}.\n#define DYNET_CUDA_PASS 1\n#include \"${rel}\"\n")
  list(APPEND cuda_pass_units ${unit})
endforeach()

file(GLOB cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/cuda/*.cu)
add_library(dynet_cuda OBJECT ${cuda_sources} ${cuda_pass_units})
add_dependencies(dynet_cuda dynet_layer_check)
target_include_directories(dynet_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(dynet_cuda PRIVATE CUDA::cudart CUDA::cublas)
# --extended-lambda: device kernels are written as __host__ __device__ lambdas handed to the primitives.
target_compile_options(dynet_cuda PRIVATE --extended-lambda --expt-relaxed-constexpr -Xcompiler=-Wall,-Wno-unused-parameter)
set_target_properties(dynet_cuda PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
set(DYNET_CUDA_OBJECTS $<TARGET_OBJECTS:dynet_cuda>)

# The CUDA code alone, as a library that plugs into a CPU build's libdynet (whose C++ objects are the same
# as this build's): its static initialisers register the GPU runtime and the CUDA pass's kernels in the
# process that preloads it. On machines without a GPU, scripts/test preloads it into the CPU build's tests
# (LD_BIND_NOW: every symbol it needs from libdynet must resolve), which checks that the CUDA code links and
# registers the same kernels as the host pass without compiling the library and the tests a second time.
add_library(dynet_cuda_plugin SHARED EXCLUDE_FROM_ALL $<TARGET_OBJECTS:dynet_cuda>)
target_link_libraries(dynet_cuda_plugin PRIVATE CUDA::cudart CUDA::cublas)
set_target_properties(dynet_cuda_plugin PROPERTIES LINKER_LANGUAGE CXX CUDA_RUNTIME_LIBRARY Shared)
