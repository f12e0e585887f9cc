#include "workers/events/protocol.h"

#include <cstring>

namespace studio::events {

namespace {

constexpr char kMagic[4] = {'D', 'I', 'T', 'E'};

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Hello: return "hello";
    case Kind::Phase: return "phase";
    case Kind::Progress: return "progress";
    case Kind::Preview: return "preview";
    case Kind::Frame: return "frame";
    case Kind::Log: return "log";
    case Kind::Done: return "done";
    case Kind::Error: return "error";
    case Kind::Heartbeat: return "heartbeat";
    case Kind::Cancel: return "cancel";
    case Kind::Job: return "job";
  }
  return "unknown";
}

bool is_known_kind(uint8_t k) { return k >= uint8_t(Kind::Hello) && k <= uint8_t(Kind::Job); }

std::string encode(const Message& m) {
  const std::string body = m.body.dump();
  if (body.size() > kMaxBody)
    throw ProtocolError(std::string(kind_name(m.kind)) + " message body of " + std::to_string(body.size()) +
                        " bytes is over the limit of " + std::to_string(kMaxBody));
  if (m.payload.size() > kMaxPayload)
    throw ProtocolError(std::string(kind_name(m.kind)) + " message payload of " + std::to_string(m.payload.size()) +
                        " bytes is over the limit of " + std::to_string(kMaxPayload));
  std::string out(kMagic, 4);
  out.push_back(char(kProtocolVersion));
  out.push_back(char(m.kind));
  out.append(2, '\0');
  put_u32(out, uint32_t(body.size()));
  put_u32(out, uint32_t(m.payload.size()));
  out += body;
  out += m.payload;
  return out;
}

void Decoder::feed(const char* data, size_t size) {
  if (broken_) throw ProtocolError("the stream already broke the protocol; no more input is read");
  buffer_.append(data, size);
}

std::optional<Message> Decoder::next() {
  while (!broken_ && buffer_.size() >= kHeaderSize) {
    const char* h = buffer_.data();
    auto fail = [&](const std::string& why) -> std::optional<Message> {
      broken_ = true;
      buffer_.clear();
      throw ProtocolError(why);
    };
    if (std::memcmp(h, kMagic, 4) != 0) return fail("a frame does not start with \"DITE\": not a DiT Studio event stream");
    if (uint8_t(h[4]) != kProtocolVersion)
      return fail("protocol version " + std::to_string(uint8_t(h[4])) + " is not the supported version " +
                  std::to_string(kProtocolVersion) + "; run workers and launcher of the same release");
    if (h[6] != 0 || h[7] != 0) return fail("reserved header bytes are not zero");
    const uint32_t body = get_u32(h + 8), payload = get_u32(h + 12);
    if (body > kMaxBody)
      return fail("a body of " + std::to_string(body) + " bytes is over the limit of " + std::to_string(kMaxBody));
    if (payload > kMaxPayload)
      return fail("a payload of " + std::to_string(payload) + " bytes is over the limit of " +
                  std::to_string(kMaxPayload));
    const size_t whole = kHeaderSize + size_t(body) + size_t(payload);
    if (buffer_.size() < whole) return std::nullopt;
    const uint8_t kind = uint8_t(h[5]);
    if (!is_known_kind(kind)) {
      ++skipped_;
      buffer_.erase(0, whole);
      continue;
    }
    Message m;
    m.kind = Kind(kind);
    m.body = nlohmann::json::parse(buffer_.begin() + kHeaderSize, buffer_.begin() + kHeaderSize + body, nullptr, false);
    if (m.body.is_discarded() || !m.body.is_object())
      return fail(std::string("the body of a ") + kind_name(m.kind) + " message is not a JSON object");
    m.payload.assign(buffer_, kHeaderSize + body, payload);
    buffer_.erase(0, whole);
    return m;
  }
  return std::nullopt;
}

}  // namespace studio::events
