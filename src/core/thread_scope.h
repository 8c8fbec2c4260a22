// Scope objects that code deep below finds without being passed it: while one is alive it is the innermost of
// its type on its thread (current()), and its destruction makes the one it hid current again.
#pragma once

namespace dynet::detail {

// Derive as `class X : public ThreadScope<X>`.
template <class T>
class ThreadScope {
 public:
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  // The innermost alive on this thread, or null.
  static T* current() { return current_; }

 protected:
  ThreadScope() : outer_(current_) { current_ = static_cast<T*>(this); }
  ~ThreadScope() { current_ = outer_; }

 private:
  T* outer_;
  static inline thread_local T* current_ = nullptr;
};

}  // namespace dynet::detail
