// DyNet's dynet/cuda-matrix-multiply.h declares CUDA-backend code only (inside #if HAVE_CUDA); this CPU build declares
// nothing here either.
#pragma once

#include "dynet/except.h"
