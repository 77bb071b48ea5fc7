// SavePlan, LoadPlan, ParsePlan and ContentHash: round trips are bit-identical, writes are
// atomic, and truncated, corrupted, foreign-version or missing files are PlanErrors naming
// the file.
#include "engine/plan/plan_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "tests/support/random_plan.h"

namespace twinflow::plan {
namespace {

namespace fs = std::filesystem;

class PlanIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("plan_io_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }

  // Expects `f` to throw a PlanError mentioning each fragment.
  template <typename F>
  static void ExpectPlanError(F f, std::initializer_list<std::string> fragments) {
    try {
      f();
      ADD_FAILURE() << "no PlanError";
    } catch (const PlanError& e) {
      for (const std::string& fragment : fragments) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << e.what() << "\n  lacks: " << fragment;
      }
    }
  }

  static Plan Sample(uint64_t seed = 7) {
    Rng rng(seed);
    return testing::RandomPlan(rng);
  }

  fs::path dir_;
};

TEST_F(PlanIoTest, RoundTripIsBitIdentical) {
  const Plan plan = Sample();
  SavePlan(plan, Path("a.pb"));
  const Plan loaded = LoadPlan(Path("a.pb"));
  EXPECT_EQ(loaded.version(), kPlanVersion);
  EXPECT_EQ(loaded.content_hash(), ContentHash(loaded));
  SavePlan(loaded, Path("b.pb"));
  EXPECT_EQ(Read(Path("a.pb")), Read(Path("b.pb")));
  EXPECT_EQ(loaded.tasks_size(), plan.tasks_size());
  EXPECT_EQ(loaded.regsts_size(), plan.regsts_size());
}

// The hash of a Plan carrying one is that of the Plan with the field empty, with or without
// a version (the fast path cuts the field out of the serialised bytes).
TEST_F(PlanIoTest, ContentHashIgnoresTheHashField) {
  for (const uint32_t version : {0u, kPlanVersion}) {
    Plan plan = Sample();
    plan.set_version(version);
    plan.clear_content_hash();
    const std::string expected = ContentHash(plan);
    plan.set_content_hash(std::string(300, 'x'));  // a length that takes a 2-byte varint
    EXPECT_EQ(ContentHash(plan), expected) << "version " << version;
    plan.set_content_hash("abc");
    EXPECT_EQ(ContentHash(plan), expected) << "version " << version;
  }
}

TEST_F(PlanIoTest, SaveStampsVersionAndHash) {
  Plan plan = Sample();
  plan.set_version(0);
  plan.set_content_hash("stale");
  SavePlan(plan, Path("a.pb"));
  const Plan loaded = LoadPlan(Path("a.pb"));
  EXPECT_EQ(loaded.version(), kPlanVersion);
  EXPECT_EQ(loaded.content_hash().size(), 32u);
}

TEST_F(PlanIoTest, AtomicWriteLeavesNoTemporaryFiles) {
  SavePlan(Sample(1), Path("a.pb"));
  SavePlan(Sample(2), Path("a.pb"));  // over an existing file
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "a.pb");
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(LoadPlan(Path("a.pb")).content_hash(), ContentHash(Sample(2)));
}

TEST_F(PlanIoTest, HashIsStableAndIgnoresItsOwnField) {
  Plan a = Sample(3);
  Plan b = Sample(3);
  EXPECT_EQ(ContentHash(a), ContentHash(b));
  b.set_content_hash("anything");
  EXPECT_EQ(ContentHash(a), ContentHash(b));
  b.mutable_tasks(0)->set_name(b.tasks(0).name() + "x");
  EXPECT_NE(ContentHash(a), ContentHash(b));
  // A fixed digest: the hash must not depend on the process, platform or run.
  Plan tiny;
  tiny.set_version(1);
  tiny.set_pieces_per_step(2);
  EXPECT_EQ(ContentHash(tiny), "44be19c24af05b8c25398f76558f8974");
}

TEST_F(PlanIoTest, MissingUnreadableOrDirectoryPathsAreNamed) {
  ExpectPlanError([&] { LoadPlan(Path("nope.pb")); }, {"nope.pb"});
  ExpectPlanError([&] { LoadPlan(dir_.string()); }, {dir_.string(), "directory"});
  ExpectPlanError([&] { SavePlan(Sample(), Path("no/such/dir/a.pb")); }, {"no/such/dir/a.pb"});
}

TEST_F(PlanIoTest, TruncatedFileIsAPlanError) {
  SavePlan(Sample(), Path("a.pb"));
  const std::string bytes = Read(Path("a.pb"));
  for (size_t keep : {size_t{0}, size_t{1}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    Write(Path("cut.pb"), bytes.substr(0, keep));
    ExpectPlanError([&] { LoadPlan(Path("cut.pb")); }, {"cut.pb"});
  }
}

TEST_F(PlanIoTest, FlippedByteIsAHashMismatch) {
  SavePlan(Sample(), Path("a.pb"));
  std::string bytes = Read(Path("a.pb"));
  // A byte inside a task name: the protobuf still parses, only the hash can tell.
  const size_t at = bytes.find("@0");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = '7';
  Write(Path("flip.pb"), bytes);
  ExpectPlanError([&] { LoadPlan(Path("flip.pb")); },
                  {"flip.pb", "content hash", "does not match", "corrupt"});
}

TEST_F(PlanIoTest, WrongVersionIsRejected) {
  Plan plan = Sample();
  plan.set_version(kPlanVersion + 1);
  plan.set_content_hash(ContentHash(plan));
  ExpectPlanError([&] { ParsePlan(plan.SerializeAsString(), "future.pb"); },
                  {"future.pb", "version 2"});
  ExpectPlanError([&] { ParsePlan("", "empty.pb"); }, {"empty.pb", "version 0"});
}

// Version 1 carried dtypes, device types, collective kinds and reduce ops as strings; a file
// of it is refused before anything reads those fields, saying what it found and what it needs.
TEST_F(PlanIoTest, OlderVersionIsRefusedNamingBothVersions) {
  Plan plan = Sample();
  plan.set_version(1);
  plan.set_content_hash(ContentHash(plan));
  Write(Path("old.pb"), plan.SerializeAsString());
  ExpectPlanError([&] { LoadPlan(Path("old.pb")); },
                  {"old.pb", "plan version 1 is not supported",
                   "reads version " + std::to_string(kPlanVersion)});
}

TEST_F(PlanIoTest, InvalidPlanWithGoodHashNamesOriginAndCulprit) {
  Plan plan = Sample();
  plan.mutable_regsts(0)->set_slots(0);
  plan.set_version(kPlanVersion);
  plan.set_content_hash(ContentHash(plan));
  ExpectPlanError([&] { ParsePlan(plan.SerializeAsString(), "bad.pb"); },
                  {"bad.pb: ", "regst 0", "0 slots"});
}

TEST_F(PlanIoTest, GarbageIsAPlanError) {
  ExpectPlanError([&] { ParsePlan(std::string("\xff\xff\xff\xff\xff\xff", 6), "junk"); }, {"junk"});
}

}  // namespace
}  // namespace twinflow::plan
