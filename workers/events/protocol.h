// The framing of the event stream between ranks and the program that started them (dit-launch, the
// studio). Plain C++ and nlohmann::json: no Qt, no LibTorch, so both sides and the fuzzer share it.
//
// A frame is a 16-byte header, then a JSON object (the body), then an optional binary payload:
//   bytes 0-3   "DITE"
//   byte  4     protocol version (kProtocolVersion)
//   byte  5     message kind (Kind)
//   bytes 6-7   zero
//   bytes 8-11  body size, little-endian, at most kMaxBody
//   bytes 12-15 payload size, little-endian, at most kMaxPayload
// Sizes are checked before anything is allocated; a frame that breaks a rule ends the connection.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace studio::events {

constexpr uint8_t kProtocolVersion = 1;
constexpr size_t kHeaderSize = 16;
constexpr uint32_t kMaxBody = 1u << 20;     // 1 MiB of JSON
constexpr uint32_t kMaxPayload = 64u << 20;  // one RGB8 frame up to 4096 x 4096 and more

enum class Kind : uint8_t {
  Hello = 1,      // rank -> launcher, first: who I am, and the job's token
  Phase = 2,      // loading, encoding, denoising, decoding, writing
  Progress = 3,   // one denoising step done, with time, memory and traffic
  Preview = 4,    // a small RGB8 picture of the latents after a step
  Frame = 5,      // one decoded RGB8 frame
  Log = 6,        // a line of the rank's log
  Done = 7,       // the rank finished, with its figures
  Error = 8,      // the rank failed: kind and message
  Heartbeat = 9,  // the rank is alive (sent every second by a thread of its own)
  Cancel = 10,    // launcher -> rank: stop at the next step
  Job = 11,       // launcher -> a rank serving several runs (dit-worker --serve): the next job's file
};
const char* kind_name(Kind k);
bool is_known_kind(uint8_t k);

struct Message {
  Kind kind = Kind::Heartbeat;
  nlohmann::json body = nlohmann::json::object();
  std::string payload;  // binary, may be empty
};

// A frame that breaks the rules above; what() says which rule and the value found.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The bytes of one frame. ProtocolError if the body or payload is too large to send.
std::string encode(const Message& m);

// Reassembles frames from a byte stream that arrives in arbitrary pieces. Unknown kinds of this
// protocol version are skipped (counted in skipped()); anything else malformed throws ProtocolError,
// after which the decoder refuses further input.
class Decoder {
 public:
  void feed(const char* data, size_t size);
  // The next whole message, if one has arrived.
  std::optional<Message> next();
  size_t buffered() const { return buffer_.size(); }
  size_t skipped() const { return skipped_; }

 private:
  std::string buffer_;
  size_t skipped_ = 0;
  bool broken_ = false;
};

}  // namespace studio::events
