// WriteFileAtomically and ReadFile on every kind of path: regular files are replaced whole
// and leave no temporary, even when the write fails; devices and FIFOs are written in place
// (never replaced by a regular file); folders are refused; reads refuse what could block.
#include "engine/core/file_io.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "engine/core/error.h"

namespace twinflow {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("file_io_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  int FilesInDir() const {
    return static_cast<int>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgumentError& e) {
    return e.message();
  }
  return "";
}

TEST_F(FileIoTest, RegularFilesAreReplacedWhole) {
  WriteFileAtomically(Path("a"), "first");
  WriteFileAtomically(Path("a"), "second, longer");
  EXPECT_EQ(ReadFile(Path("a")), "second, longer");
  EXPECT_EQ(FilesInDir(), 1);
}

TEST_F(FileIoTest, DevNullStaysADevice) {
  WriteFileAtomically("/dev/null", "anything");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
}

TEST_F(FileIoTest, DevFullFailsNamingTheCause) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string message = ErrorOf([] { WriteFileAtomically("/dev/full", "bytes"); });
  EXPECT_NE(message.find("/dev/full"), std::string::npos) << message;
  EXPECT_NE(message.find("No space"), std::string::npos) << message;
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(FileIoTest, FifosAreWrittenInPlace) {
  ASSERT_EQ(::mkfifo(Path("pipe").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(Path("pipe"), std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  WriteFileAtomically(Path("pipe"), "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(Path("pipe")));
}

TEST_F(FileIoTest, FoldersAreRefused) {
  const std::string message = ErrorOf([&] { WriteFileAtomically(dir_.string(), "x"); });
  EXPECT_NE(message.find("directory"), std::string::npos) << message;
}

TEST_F(FileIoTest, LinksAreFollowedAndKept) {
  WriteFileAtomically(Path("target"), "old");
  fs::create_symlink(Path("target"), Path("link"));
  WriteFileAtomically(Path("link"), "new");
  EXPECT_TRUE(fs::is_symlink(Path("link")));
  EXPECT_EQ(ReadFile(Path("target")), "new");
}

// A write cut short (here by the file size limit: EFBIG) keeps the old file and leaves no
// temporary behind.
TEST_F(FileIoTest, AFailedWriteKeepsTheOldFileAndNoTemporary) {
  WriteFileAtomically(Path("a"), "the old contents");
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string message =
      ErrorOf([&] { WriteFileAtomically(Path("a"), std::string(1 << 20, 'x')); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find(Path("a")), std::string::npos) << message;
  EXPECT_EQ(ReadFile(Path("a")), "the old contents");
  EXPECT_EQ(FilesInDir(), 1);
}

TEST_F(FileIoTest, TemporariesOfDeadWritersAreRemoved) {
  // No process has a pid this large (Linux's pid_max is at most 2^22).
  const std::string stale = Path("a.tmp.99999999");
  std::ofstream(stale) << "half a checkpoint";
  WriteFileAtomically(Path("a"), "whole");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(ReadFile(Path("a")), "whole");
}

TEST_F(FileIoTest, ReadsRefuseWhatCouldBlockOrIsTooLarge) {
  ASSERT_EQ(::mkfifo(Path("pipe").c_str(), 0600), 0);
  std::string message = ErrorOf([&] { ReadFile(Path("pipe")); });  // returns at once
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
  message = ErrorOf([&] { ReadFile(dir_.string()); });
  EXPECT_NE(message.find("directory"), std::string::npos) << message;
  message = ErrorOf([&] { ReadFile(Path("missing")); });
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
  WriteFileAtomically(Path("big"), std::string(100, 'x'));
  message = ErrorOf([&] { ReadFile(Path("big"), 99); });
  EXPECT_NE(message.find("100 bytes"), std::string::npos) << message;
  EXPECT_EQ(ReadFile(Path("big"), 100).size(), 100u);
}

}  // namespace
}  // namespace twinflow
