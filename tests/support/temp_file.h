#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace twinflow::testing {

// A text fixture in the test's temporary folder, removed with this. ctest runs each test in
// its own process, several at once, so the name carries the process id and the test's name
// as well as a count: a per-process count alone makes two processes write one file.
class TempTextFile {
 public:
  TempTextFile(const std::string& text, const std::string& extension) {
    static int count = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "/twinflow_" + std::to_string(::getpid()) + "_" +
            (info != nullptr ? info->name() : "none") + "_" + std::to_string(count++) + extension;
    std::ofstream(path_) << text;
  }
  ~TempTextFile() { std::remove(path_.c_str()); }
  TempTextFile(const TempTextFile&) = delete;
  TempTextFile& operator=(const TempTextFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace twinflow::testing
