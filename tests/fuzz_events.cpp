// libFuzzer target: the event decoder and the typed parsers on arbitrary bytes. Whatever arrives, they
// either return messages or throw ProtocolError; anything else (a crash, a sanitizer report, a hang,
// unbounded memory) is a bug. A message that decodes must encode back to bytes that decode the same.
#include <cstddef>
#include <cstdint>

#include "workers/events/messages.h"

using namespace studio::events;

namespace {

void parse_typed(const Message& m) {
  try {
    switch (m.kind) {
      case Kind::Hello: Hello::parse(m); break;
      case Kind::Phase: Phase::parse(m); break;
      case Kind::Progress: Progress::parse(m); break;
      case Kind::Preview:
      case Kind::Frame: Picture::parse(m); break;
      case Kind::Log: LogLine::parse(m); break;
      case Kind::Done: Done::parse(m); break;
      case Kind::Error: Error::parse(m); break;
      case Kind::Job: job_text(m); break;
      default: rank_of(m); break;
    }
  } catch (const ProtocolError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks how the stream is cut into reads, as a socket would deliver it.
  const size_t chunk = 1 + data[0] % 64;
  Decoder d;
  try {
    for (size_t off = 1; off < size; off += chunk) {
      d.feed(reinterpret_cast<const char*>(data) + off, std::min(chunk, size - off));
      while (auto m = d.next()) {
        parse_typed(*m);
        Decoder again;
        const std::string bytes = encode(*m);
        again.feed(bytes.data(), bytes.size());
        auto back = again.next();
        if (!back || back->body != m->body || back->payload != m->payload || back->kind != m->kind) __builtin_trap();
      }
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
