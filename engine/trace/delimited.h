#pragma once
// A protobuf message appended to a byte string behind its length as a base-128 varint: the
// framing of Chakra's .et files, and (behind a field-1 tag) of a Perfetto trace's packets.
#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <string>

namespace twinflow::trace {

inline void AppendDelimited(const google::protobuf::MessageLite& message, std::string& out) {
  const std::string bytes = message.SerializeAsString();
  for (uint64_t n = bytes.size();; n >>= 7) {
    if (n < 0x80) {
      out += static_cast<char>(n);
      break;
    }
    out += static_cast<char>((n & 0x7F) | 0x80);
  }
  out += bytes;
}

}  // namespace twinflow::trace
