// Wall-clock timers (DyNet's dynet/timing.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dynet {

// Prints "[msg <elapsed> ms]" to std::cerr when it goes out of scope.
struct Timer {
  explicit Timer(const std::string& msg) : msg(msg), start(std::chrono::steady_clock::now()) {}
  ~Timer() {
    const auto stop = std::chrono::steady_clock::now();
    std::cerr << '[' << msg << ' ' << std::chrono::duration<double, std::milli>(stop - start).count() << " ms]\n";
  }
  std::string msg;
  std::chrono::steady_clock::time_point start;
};

// A stopwatch: stop() returns the milliseconds since construction or the last start().
struct Timing {
  Timing() : _start(std::chrono::steady_clock::now()) {}
  void start() { _start = std::chrono::steady_clock::now(); }
  double stop() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - _start).count();
  }
  std::chrono::steady_clock::time_point _start;
};

// Cumulative time per name over start(name)/stop(name) pairs; the destructor prints the totals
// ("Timing Info:", longest first) to std::cout if any timer was used.
class NamedTimer {
 public:
  ~NamedTimer() {
    if (cumtimes.empty()) return;
    std::vector<std::pair<std::string, double>> rows(cumtimes.begin(), cumtimes.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::cout << "Timing Info:\n";
    for (const auto& [name, ms] : rows) std::cout << std::setw(12) << ms << " ms  " << name << '\n';
  }
  void start(const std::string& name) { timers[name].start(); }
  void stop(const std::string& name) { cumtimes[name] += timers[name].stop(); }

  std::map<std::string, double> cumtimes;
  std::map<std::string, Timing> timers;
};

}  // namespace dynet
