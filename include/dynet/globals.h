// Process-wide settings and the random engine.
#pragma once

#include <random>

namespace dynet {

struct Device;
class NamedTimer;

// The engine of DyNet's home thread (the one that called initialize): a heap object that a program may
// replace (`delete dynet::rndeng; dynet::rndeng = new std::mt19937(seed);`), after which that thread's
// draws (initializers, dropout, sampling) come from the program's engine. Other threads draw from their
// own engines (dynet/init.h, set_random_stream).
extern std::mt19937* rndeng;
// The calling thread's random engine: *rndeng on the home thread's stream 0, else the thread's own.
std::mt19937& random_engine();
extern Device* default_device;
extern int autobatch_flag;
extern int profiling_flag;
extern float default_weight_decay_lambda;
// DyNet's process-wide timer for ad-hoc profiling (timer.start(name) / timer.stop(name), dynet/timing.h);
// it prints its totals at exit when it was used.
extern NamedTimer timer;

}  // namespace dynet
