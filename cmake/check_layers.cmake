# Build-time check of the layering (run with cmake -P by the dynet_layer_check target):
#   core < kernels < {ops, exec} < {train, io} < {rnn, dist} < python
# A file may include headers of its own layer and of lower ranks only; siblings of one rank may not
# include each other. Public headers (include/dynet) belong to the layer that implements them, listed
# below; a new public header must be added to that list.
# The dist layer is linked into its own library (libdynet_mpi, which needs libmpi) and not into libdynet:
# so no file outside src/dist may include its headers but python/src/mpi.cc (the extension dynet._dynet_mpi)
# and, in the tests, examples and benchmarks, programs that link dynet::mpi (not checked here).
# Variables: SOURCE_DIR (the repository), STAMP (written on success).
cmake_minimum_required(VERSION 3.24)

set(rank_core 0)
set(rank_kernels 1)
set(rank_ops 2)
set(rank_exec 2)
set(rank_train 3)
set(rank_io 3)
set(rank_rnn 4)
set(rank_dist 4)
set(rank_python 5)

set(public_core dim.h tensor.h index-tensor.h dynet.h model.h param-init.h init.h globals.h devices.h timing.h
    except.h aligned-mem-pool.h mem.h device-structs.h weight-decay.h sig.h exec.h str-util.h graph.h rand.h
    saxe-init.h dynet-helper.h gpu-ops.h cuda.h cudnn-ops.h virtual-cudnn.h cuda-matrix-multiply.h gpu-kernels.h)
set(public_kernels functors.h simd-functors.h matrix-multiply.h tensor-eigen.h op-helper.h)
# nodes-*.h: DyNet's node names, each building the op of an expr.h function.
file(GLOB node_headers RELATIVE ${SOURCE_DIR}/include/dynet ${SOURCE_DIR}/include/dynet/nodes-*.h)
set(public_ops expr.h nodes.h param-nodes.h ${node_headers})
set(public_train training.h grad-check.h shadow-params.h mp.h gradient-reducer.h)
set(public_io io.h dict.h pretrain.h io-macros.h)
set(public_rnn rnn.h lstm.h gru.h fast-lstm.h deep-lstm.h treelstm.h rnn-state-machine.h cfsm-builder.h
    hsm-builder.h c2w.h)
set(public_dist mpi.h)

function(layer_of_public header out)
  foreach(layer core kernels ops train io rnn dist)
    if(header IN_LIST public_${layer})
      set(${out} ${layer} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(errors "")
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/src/*.cc ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/src/*.cu
     ${SOURCE_DIR}/src/*.cuh ${SOURCE_DIR}/include/dynet/*.h ${SOURCE_DIR}/python/*.cc ${SOURCE_DIR}/python/*.h)
foreach(file ${files})
  if(file MATCHES "^src/([a-z]+)/")
    set(layer ${CMAKE_MATCH_1})
  elseif(file MATCHES "^python/")
    set(layer python)
  elseif(file MATCHES "^include/dynet/(.*)$")
    layer_of_public(${CMAKE_MATCH_1} layer)
    if(layer STREQUAL "")
      list(APPEND errors "${file}: public header without a layer (add it to cmake/check_layers.cmake)")
      continue()
    endif()
  endif()
  if(NOT DEFINED rank_${layer})
    list(APPEND errors "${file}: unknown layer '${layer}' (add it to cmake/check_layers.cmake)")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
    set(target "")
    if(inc MATCHES "^dynet/(.*)$")
      layer_of_public(${CMAKE_MATCH_1} target)
    elseif(inc MATCHES "^([a-z]+)/")
      set(target ${CMAKE_MATCH_1})
    else()
      set(target ${layer})  # a header next to the file
    endif()
    if(target STREQUAL "" OR NOT DEFINED rank_${target})
      continue()  # not a project header (e.g. a generated one)
    endif()
    if(NOT target STREQUAL layer AND NOT rank_${target} LESS rank_${layer})
      list(APPEND errors "${file} (layer ${layer}) includes \"${inc}\" (layer ${target}): a lower layer may not include a higher or sibling one")
    elseif(target STREQUAL "dist" AND layer STREQUAL "python" AND NOT file STREQUAL "python/src/mpi.cc")
      list(APPEND errors "${file} includes \"${inc}\" (layer dist): dynet._dynet does not link libdynet_mpi (it must load without libmpi); MPI bindings go in python/src/mpi.cc (dynet._dynet_mpi)")
    endif()
  endforeach()
endforeach()

if(errors)
  list(JOIN errors "\n  " text)
  message(FATAL_ERROR "layering check failed:\n  ${text}")
endif()
file(WRITE ${STAMP} "layering checked\n")
