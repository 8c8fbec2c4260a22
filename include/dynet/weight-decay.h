// L2WeightDecay (DyNet's dynet/weight-decay.h) is declared in dynet/model.h, where each collection
// keeps one.
#pragma once

#include "dynet/model.h"
