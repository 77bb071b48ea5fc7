// Checkpoint files: round trips are exact; truncation, a flipped byte, a wrong magic and a
// checkpoint of another model are InvalidArgumentErrors naming the file or the variable; and a
// save replaces the file whole.
#include "engine/runtime/checkpoint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/core/rng.h"

namespace twinflow::runtime {
namespace {

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("twinflow_ck_" + name + "_" +
                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

Checkpoint Sample() {
  Rng rng(5);
  Checkpoint c;
  c.steps = 7;
  c.tensors["layer0/weight"] = Tensor::Random(Shape{3, 4}, DType::kF32, rng);
  c.tensors["layer0/weight/momentum"] = Tensor::Random(Shape{3, 4}, DType::kF32, rng);
  c.tensors["count"] = Tensor(Shape{}, DType::kI64);
  return c;
}

std::string ErrorOf(const std::string& dir) {
  try {
    LoadCheckpoint(dir);
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTripIsExact) {
  const std::string dir = TempDir("round");
  const Checkpoint saved = Sample();
  SaveCheckpoint(dir, saved);
  const Checkpoint loaded = LoadCheckpoint(dir);
  EXPECT_EQ(loaded.steps, 7);
  ASSERT_EQ(loaded.tensors.size(), saved.tensors.size());
  for (const auto& [name, t] : saved.tensors) {
    const Tensor& u = loaded.tensors.at(name);
    EXPECT_EQ(u.shape(), t.shape());
    EXPECT_EQ(u.dtype(), t.dtype());
    EXPECT_EQ(std::memcmp(u.raw(), t.raw(), t.nbytes()), 0) << name;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "no temporary left";
}

TEST(Checkpoint, DamagedFilesAreRefusedNamingTheFile) {
  const std::string dir = TempDir("damaged");
  SaveCheckpoint(dir, Sample());
  const std::string path = CheckpointPath(dir);
  const std::string good = ReadFile(path);
  for (size_t cut : {size_t{0}, size_t{5}, size_t{40}, good.size() - 1}) {
    WriteFileAtomically(path, good.substr(0, cut));
    const std::string error = ErrorOf(dir);
    EXPECT_NE(error.find(path), std::string::npos) << "cut at " << cut << ": " << error;
  }
  for (size_t at : {size_t{3}, size_t{20}, good.size() / 2, good.size() - 3}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    WriteFileAtomically(path, flipped);
    EXPECT_NE(ErrorOf(dir).find(path), std::string::npos) << "flip at " << at;
  }
  EXPECT_NE(ErrorOf(TempDir("missing")).find("cannot read"), std::string::npos);
}

// A file in the checkpoint format with a valid digest, holding one tensor record as given
// (its claimed size, and only `payload` bytes of data).
std::string Crafted(int64_t steps, const std::vector<uint64_t>& dims, uint64_t size,
                    const std::string& payload) {
  std::string bytes = "TWCKPT01";
  const auto u64 = [&](uint64_t v) { bytes.append(reinterpret_cast<const char*>(&v), 8); };
  u64(static_cast<uint64_t>(steps));
  u64(1);
  u64(1);
  bytes += "w";
  u64(3);
  bytes += "f32";
  u64(dims.size());
  for (uint64_t d : dims) u64(d);
  u64(size);
  bytes += payload;
  return bytes + Digest(bytes);
}

// Lengths are checked before anything is allocated: a 100-byte file that claims f32[2^30] or
// 8 TiB is refused at once, naming the file, not after allocating it.
TEST(Checkpoint, ClaimedSizesAreCheckedAgainstTheFileBeforeAllocating) {
  const std::string dir = TempDir("claims");
  std::filesystem::create_directories(dir);
  const std::string path = CheckpointPath(dir);
  for (const std::vector<uint64_t>& dims :
       {std::vector<uint64_t>{uint64_t{1} << 30}, std::vector<uint64_t>{uint64_t{1} << 40, 2}}) {
    const uint64_t size = 4 * dims[0] * (dims.size() > 1 ? dims[1] : 1);
    WriteFileAtomically(path, Crafted(1, dims, size, std::string(16, '\0')));
    const auto start = std::chrono::steady_clock::now();
    const std::string error = ErrorOf(dir);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    EXPECT_NE(error.find("truncated"), std::string::npos) << error;
    EXPECT_NE(error.find(path), std::string::npos) << error;
  }
  // Extents whose product overflows are refused too.
  WriteFileAtomically(path, Crafted(1, {uint64_t{1} << 32, uint64_t{1} << 32}, 0, ""));
  EXPECT_NE(ErrorOf(dir).find("2^60"), std::string::npos) << ErrorOf(dir);
}

TEST(Checkpoint, NegativeOrHugeStepsAndNonFiniteValuesAreRefused) {
  const std::string dir = TempDir("values");
  Checkpoint c = Sample();
  for (int64_t steps : {int64_t{-1}, std::numeric_limits<int64_t>::max()}) {
    c.steps = steps;
    SaveCheckpoint(dir, c);
    EXPECT_NE(ErrorOf(dir).find("claims step"), std::string::npos) << ErrorOf(dir);
  }
  c.steps = 3;
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    c.tensors["layer0/weight"].SetDouble(5, bad);
    SaveCheckpoint(dir, c);
    const std::string error = ErrorOf(dir);
    EXPECT_NE(error.find("'layer0/weight' holds"), std::string::npos) << error;
    EXPECT_NE(error.find("element 5"), std::string::npos) << error;
  }
}

TEST(Checkpoint, ACheckpointOfAnotherModelIsRefusedNamingTheVariable) {
  plan::Plan plan;
  plan::Binding* b = plan.add_variables();
  b->set_name("layer0/weight");
  b->mutable_logical()->add_shape(3);
  b->mutable_logical()->add_shape(5);
  b->mutable_logical()->set_dtype(plan::DTYPE_F32);
  try {
    CheckCheckpointFits(plan, Sample());
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'layer0/weight'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3,5]"), std::string::npos) << e.what();
  }
  b->set_name("layer9/bias");
  EXPECT_THROW(CheckCheckpointFits(plan, Sample()), InvalidArgumentError);
}

}  // namespace
}  // namespace twinflow::runtime
