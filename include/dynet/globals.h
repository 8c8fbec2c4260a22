// Process-wide settings and the random engine.
#pragma once

#include <random>

namespace dynet {

struct Device;
class NamedTimer;

// The calling thread's random engine: its own, from the global seed and its stream (dynet/init.h).
extern thread_local std::mt19937* rndeng;
std::mt19937& random_engine();
extern Device* default_device;
extern int autobatch_flag;
extern int profiling_flag;
extern float default_weight_decay_lambda;
// DyNet's process-wide timer for ad-hoc profiling (timer.start(name) / timer.stop(name), dynet/timing.h);
// it prints its totals at exit when it was used.
extern NamedTimer timer;

}  // namespace dynet
