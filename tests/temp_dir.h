// A temporary directory private to one test: ctest runs every test in its own process, in parallel,
// so fixed names under /tmp race. The name carries the process id, the running test's name and a
// counter; the directory and everything in it are removed when the object goes out of scope.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace dynet::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<unsigned> counter{0};
    std::string name = "dynet_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
      name += std::string("_") + info->test_suite_name() + "." + info->name();
      for (char& c : name)
        if (c == '/') c = '_';  // parameterised test names
    }
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    // A test may have made the directory read-only (e.g. to make a save fail).
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // The path of `name` inside the directory (the file is not created).
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `text` to `name` inside the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace dynet::test
