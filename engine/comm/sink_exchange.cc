#include "engine/comm/sink_exchange.h"

#include <cstring>
#include <vector>

#include "engine/comm/mpi_session.h"
#include "engine/comm/task_descs.h"
#include "engine/core/error.h"

namespace twinflow::comm {
namespace {

void Append(std::vector<std::byte>& out, int64_t value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(value));
}

int64_t Take(const std::vector<std::byte>& in, size_t& at) {
  if (at + sizeof(int64_t) > in.size()) throw CommError("truncated sink values from a rank");
  int64_t value = 0;
  std::memcpy(&value, in.data() + at, sizeof(value));
  at += sizeof(value);
  return value;
}

}  // namespace

runtime::SinkValues ExchangeSinkValues(const plan::Plan& plan, const runtime::SinkValues& local) {
  std::vector<std::byte> mine;
  for (const auto& [regst, pieces] : local) {
    for (const auto& [piece, value] : pieces) {
      Append(mine, regst);
      Append(mine, piece);
      Append(mine, static_cast<int64_t>(value.nbytes()));
      mine.insert(mine.end(), value.raw(), value.raw() + value.nbytes());
    }
  }
  runtime::SinkValues merged;
  for (const std::vector<std::byte>& bytes : AllgatherBytes(mine)) {
    size_t at = 0;
    while (at < bytes.size()) {
      const int64_t regst = Take(bytes, at);
      const int64_t piece = Take(bytes, at);
      const int64_t size = Take(bytes, at);
      if (regst < 0 || regst >= plan.regsts_size()) throw CommError("sink value of no register");
      Tensor value = Empty(plan.regsts(static_cast<int>(regst)).tensor(), "sink");
      if (size != static_cast<int64_t>(value.nbytes()) || at + size > bytes.size()) {
        throw CommError("sink value of regst " + std::to_string(regst) + " has the wrong size");
      }
      std::copy_n(bytes.data() + at, size, value.raw());
      at += static_cast<size_t>(size);
      merged[regst][piece] = std::move(value);
    }
  }
  return merged;
}

}  // namespace twinflow::comm
