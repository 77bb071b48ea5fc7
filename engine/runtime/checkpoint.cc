#include "engine/runtime/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {
namespace {

constexpr char kMagic[] = "TWCKPT01";
constexpr size_t kMagicSize = 8;
constexpr size_t kDigestSize = 32;
constexpr uint64_t kMaxCount = uint64_t{1} << 24;
// Steps beyond this are corrupt: it keeps step arithmetic (first + steps run) far from
// overflow.
constexpr uint64_t kMaxSteps = uint64_t{1} << 53;

void PutU64(std::string& out, uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void PutText(std::string& out, const std::string& text) {
  PutU64(out, text.size());
  out += text;
}

// Reads the body of a checkpoint file, every read checked against the end.
class Reader {
 public:
  Reader(const std::string& bytes, size_t end, const std::string& path)
      : bytes_(bytes), end_(end), path_(path) {}
  uint64_t U64(const char* what) {
    Need(sizeof(uint64_t), what);
    uint64_t value = 0;
    std::memcpy(&value, bytes_.data() + at_, sizeof(value));
    at_ += sizeof(value);
    return value;
  }
  std::string Text(const char* what) {
    const uint64_t size = U64(what);
    Need(size, what);
    std::string text = bytes_.substr(at_, size);
    at_ += size;
    return text;
  }
  void Bytes(std::byte* into, uint64_t size, const char* what) {
    Need(size, what);
    if (size > 0) std::memcpy(into, bytes_.data() + at_, size);  // an empty tensor's is null
    at_ += size;
  }
  bool done() const { return at_ == end_; }
  void Need(uint64_t size, const char* what) const {
    if (size > end_ - at_) Fail(std::string("truncated in ") + what);
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw InvalidArgumentError("checkpoint '" + path_ + "': " + what);
  }

 private:
  const std::string& bytes_;
  size_t at_ = kMagicSize;
  size_t end_;
  const std::string& path_;
};

// One tensor's record: name, dtype, shape, size, bytes. Every length is checked against the
// file before anything is allocated, and the values must be finite.
std::pair<std::string, Tensor> ReadTensor(Reader& in) {
  const std::string name = in.Text("a tensor name");
  const std::string where = "tensor '" + name + "'";
  DType dtype;
  try {
    dtype = ParseDType(in.Text("a dtype"));
  } catch (const Error& e) {
    in.Fail(where + ": " + e.message());
  }
  const uint64_t rank = in.U64("a rank");
  if (rank > 16) in.Fail(where + " has rank " + std::to_string(rank));
  std::vector<int64_t> dims;
  for (uint64_t a = 0; a < rank; ++a) {
    const uint64_t d = in.U64("a shape");
    if (d > (uint64_t{1} << 40)) in.Fail(where + " has extent " + std::to_string(d));
    dims.push_back(static_cast<int64_t>(d));
  }
  std::optional<Shape> shape;
  try {
    shape.emplace(dims);
  } catch (const Error& e) {
    in.Fail(where + ": " + e.message());
  }
  const uint64_t size = in.U64("a tensor size");
  if (size != static_cast<uint64_t>(shape->numel() * DTypeSize(dtype))) {
    in.Fail(where + " has " + std::to_string(size) + " bytes for " + DTypeName(dtype) +
            shape->ToString());
  }
  in.Need(size, "tensor data");  // before the allocation: a short file may claim terabytes
  Tensor tensor(*shape, dtype);
  in.Bytes(tensor.raw(), size, "tensor data");
  if (const int64_t bad = FirstNonFinite(tensor); bad >= 0) {
    in.Fail(where + " holds " + std::to_string(tensor.GetDouble(bad)) + " at element " +
            std::to_string(bad) + " (a checkpoint of a diverged run?)");
  }
  return {name, std::move(tensor)};
}

// The step count in the header of the checkpoint at `path`, or nullopt when it has none.
std::optional<int64_t> StepOf(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char header[kMagicSize + sizeof(uint64_t)];
  if (!in.read(header, sizeof(header)) || std::memcmp(header, kMagic, kMagicSize) != 0) {
    return std::nullopt;
  }
  uint64_t steps = 0;
  std::memcpy(&steps, header + kMagicSize, sizeof(steps));
  if (steps > kMaxSteps) return std::nullopt;
  return static_cast<int64_t>(steps);
}

std::filesystem::path OlderPath(const std::filesystem::path& dir, int64_t step) {
  return dir / ("checkpoint-" + std::to_string(step) + ".twck");
}

// Links the checkpoint about to be replaced as checkpoint-<step>.twck beside it.
void KeepAsOlder(const std::filesystem::path& current) {
  const std::optional<int64_t> step = StepOf(current);
  if (!step) return;
  const std::filesystem::path older = OlderPath(current.parent_path(), *step);
  std::error_code error;
  std::filesystem::remove(older, error);
  std::filesystem::create_hard_link(current, older, error);
  if (error) {
    throw InvalidArgumentError("cannot keep '" + current.string() + "' as '" + older.string() +
                               "': " + error.message());
  }
}

// Removes all but the `count` newest checkpoint-<step>.twck files of `dir`.
void RemoveOlderBeyond(const std::string& dir, int count) {
  std::vector<int64_t> steps;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("checkpoint-") || !name.ends_with(".twck")) continue;
    const std::string digits = name.substr(11, name.size() - 11 - 5);
    if (digits.empty() || digits.size() > 16 ||
        !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      continue;
    }
    steps.push_back(std::stoll(digits));
  }
  std::sort(steps.rbegin(), steps.rend());
  for (size_t i = static_cast<size_t>(std::max(count, 0)); i < steps.size(); ++i) {
    std::filesystem::remove(OlderPath(dir, steps[i]), error);
  }
}

}  // namespace

std::string CheckpointPath(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) return path;
  return (std::filesystem::path(path) / "checkpoint.twck").string();
}

void SaveCheckpoint(const std::string& dir, const Checkpoint& checkpoint, int keep) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw InvalidArgumentError("cannot make checkpoint folder '" + dir + "': " + error.message());
  std::string bytes(kMagic, kMagicSize);
  PutU64(bytes, static_cast<uint64_t>(checkpoint.steps));
  PutU64(bytes, checkpoint.tensors.size());
  for (const auto& [name, tensor] : checkpoint.tensors) {
    PutText(bytes, name);
    PutText(bytes, DTypeName(tensor.dtype()));
    PutU64(bytes, static_cast<uint64_t>(tensor.shape().rank()));
    for (int64_t d : tensor.shape().dims()) PutU64(bytes, static_cast<uint64_t>(d));
    PutU64(bytes, static_cast<uint64_t>(tensor.nbytes()));
    bytes.append(reinterpret_cast<const char*>(tensor.raw()), tensor.nbytes());
  }
  bytes += Digest(bytes);
  const std::filesystem::path current = std::filesystem::path(dir) / "checkpoint.twck";
  if (keep > 1) KeepAsOlder(current);
  WriteFileAtomically(current.string(), bytes);
  RemoveOlderBeyond(dir, keep - 1);
}

Checkpoint LoadCheckpoint(const std::string& where) {
  const std::string path = CheckpointPath(where);
  return ParseCheckpoint(ReadFile(path), path);
}

Checkpoint ParseCheckpoint(const std::string& bytes, const std::string& path) {
  if (bytes.size() < kMagicSize + kDigestSize || bytes.compare(0, kMagicSize, kMagic) != 0) {
    throw InvalidArgumentError("checkpoint '" + path +
                               "': not a twinflow checkpoint (or truncated)");
  }
  const size_t end = bytes.size() - kDigestSize;
  if (Digest(bytes.substr(0, end)) != bytes.substr(end)) {
    throw InvalidArgumentError("checkpoint '" + path +
                               "': its digest does not match its contents (truncated or corrupt)");
  }
  Reader in(bytes, end, path);
  Checkpoint checkpoint;
  const uint64_t steps = in.U64("the step count");
  if (steps > kMaxSteps) {
    in.Fail("claims step " + std::to_string(static_cast<int64_t>(steps)) +
            " (negative, or beyond 2^53)");
  }
  checkpoint.steps = static_cast<int64_t>(steps);
  const uint64_t count = in.U64("the tensor count");
  if (count > kMaxCount) in.Fail("claims " + std::to_string(count) + " tensors");
  for (uint64_t i = 0; i < count; ++i) {
    auto [name, tensor] = ReadTensor(in);
    if (!checkpoint.tensors.emplace(name, std::move(tensor)).second)
      in.Fail("tensor '" + name + "' appears twice");
  }
  if (!in.done()) in.Fail("has bytes after its last tensor");
  return checkpoint;
}

Checkpoint CaptureCheckpoint(const ThreadedExecutor& executor, const plan::Plan& plan,
                             int64_t steps) {
  Checkpoint checkpoint;
  checkpoint.steps = steps;
  for (const plan::Binding& b : plan.variables())
    checkpoint.tensors[b.name()] = executor.Variable(b.name());
  return checkpoint;
}

void CheckCheckpointFits(const plan::Plan& plan, const Checkpoint& checkpoint) {
  for (const plan::Binding& b : plan.variables()) {
    const auto it = checkpoint.tensors.find(b.name());
    if (it == checkpoint.tensors.end()) {
      throw InvalidArgumentError("the checkpoint has no variable '" + b.name() + "'");
    }
    const Tensor& t = it->second;
    const Shape want = ToShape(b.logical(), "variable '" + b.name() + "'");
    const DType dtype = ToDType(b.logical().dtype(), "variable '" + b.name() + "'");
    if (t.shape() != want || t.dtype() != dtype) {
      throw InvalidArgumentError("the checkpoint holds variable '" + b.name() + "' as " +
                                 DTypeName(t.dtype()) + t.shape().ToString() + ", the model as " +
                                 DTypeName(dtype) + want.ToString());
    }
  }
}

void RestoreCheckpoint(ThreadedExecutor& executor, const plan::Plan& plan,
                       const Checkpoint& checkpoint) {
  CheckCheckpointFits(plan, checkpoint);
  for (const plan::Binding& b : plan.variables()) {
    executor.SetVariable(b.name(), checkpoint.tensors.at(b.name()));
  }
}

}  // namespace twinflow::runtime
