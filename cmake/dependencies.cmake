# Every package the configure step needs, found in one place. The main CMakeLists.txt includes this
# file, and so does cmake/probe (run by scripts/setup), so a missing dependency is named, with the
# Debian package that provides it, before any build starts. Keep scripts/setup's APT_PACKAGES in step.
#
# dynet_require(<find_package args...> DEBIAN <package>): find_package without REQUIRED; a miss is
# collected and reported together with the others by dynet_report_missing().
set(DYNET_MISSING_DEPENDENCIES "")
macro(dynet_require name)
  cmake_parse_arguments(_req "" "DEBIAN;WHY" "" ${ARGN})
  find_package(${name} ${_req_UNPARSED_ARGUMENTS})
  if(NOT ${name}_FOUND)
    list(APPEND DYNET_MISSING_DEPENDENCIES "${name} (Debian package ${_req_DEBIAN}${_req_WHY})")
  endif()
endmacro()

function(dynet_report_missing)
  if(DYNET_MISSING_DEPENDENCIES)
    list(JOIN DYNET_MISSING_DEPENDENCIES "\n  " missing)
    message(FATAL_ERROR "dynet: missing build dependencies:\n  ${missing}\n"
                        "Run scripts/setup (it installs them), or install the packages named above.")
  endif()
endfunction()

dynet_require(Threads DEBIAN "libc6-dev")
dynet_require(Eigen3 3.4 NO_MODULE DEBIAN "libeigen3-dev")
dynet_require(OpenMP COMPONENTS CXX DEBIAN "libgomp1 (part of g++)")
# Debian's oneDNN CMake config does find_package(OpenCL REQUIRED) (its GPU runtime is OpenCL), and the
# OpenCL development files are only a *recommended* package of libdnnl-dev: look for them first so
# their absence is reported here instead of as a fatal error from inside oneDNN's config.
dynet_require(OpenCL DEBIAN "ocl-icd-opencl-dev" WHY ", needed by oneDNN's CMake config")
if(OpenCL_FOUND)
  dynet_require(dnnl CONFIG DEBIAN "libdnnl-dev")
endif()
if(DYNET_BUILD_TESTS)
  dynet_require(GTest DEBIAN "libgtest-dev")
endif()
# OpenMPI (optional): the data-parallel layer uses it when found (DYNET_MPI=AUTO, the default);
# DYNET_MPI=ON makes it required, OFF leaves it out. The result is DYNET_WITH_MPI.
set(DYNET_WITH_MPI OFF)
if(NOT DEFINED DYNET_MPI OR DYNET_MPI STREQUAL "AUTO" OR DYNET_MPI)
  # The C API, called from C++ (no MPI C++ bindings: they are deprecated and not needed).
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(DYNET_WITH_MPI ON)
  elseif(DEFINED DYNET_MPI AND NOT DYNET_MPI STREQUAL "AUTO")
    list(APPEND DYNET_MISSING_DEPENDENCIES "MPI (Debian packages libopenmpi-dev and openmpi-bin; -DDYNET_MPI=ON asks for it)")
  endif()
endif()
# The Python module's headers (scripts/build builds it with the project venv's Python).
if(DYNET_BUILD_PYTHON)
  dynet_require(Python 3.10 COMPONENTS Interpreter Development.Module DEBIAN "python3-dev")
endif()
dynet_report_missing()
