// The messages of the event protocol, typed. Each has make() (to a Message) and parse() (from one);
// parse() throws ProtocolError naming the field that is missing or of the wrong type, so that a
// launcher never acts on half a message.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workers/events/protocol.h"

namespace studio::events {

struct Hello {
  int rank = 0, world_size = 1;
  std::string host, device, token;
  int64_t pid = 0;
  int protocol = kProtocolVersion;
  Message make() const;
  static Hello parse(const Message& m);
};

// Memory and traffic of a rank at one moment. Device figures are 0 on the CPU.
struct Resources {
  uint64_t device_allocated = 0, device_reserved = 0, device_peak = 0;
  uint64_t host_rss = 0, host_peak = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  // What the job holds now: the device's allocation on a GPU, the process's resident memory on the CPU.
  uint64_t in_use() const { return device_allocated ? device_allocated : host_rss; }
};

struct Phase {
  int rank = 0;
  std::string phase;  // loading, encoding, denoising, decoding, writing
  // How far into it, where the phase counts its parts (the decode: tiles, frame batches or the decoder's
  // levels): `part` of `parts` done. On the wire only when parts > 0.
  int part = 0, parts = 0;
  // The rank's memory and traffic as it reached that part (the decode is often a rank's peak, and no step
  // reports it); on the wire only where given.
  std::optional<Resources> resources;
  Message make() const;
  static Phase parse(const Message& m);
};

struct Progress {
  int rank = 0, step = 0, total = 0;
  double seconds = 0;  // this step's
  // With a step cache: how many of the step's `calls` transformer calls ran every block; else -1 (absent).
  // On the wire, 'full' says whether all of them did; a step of more than one call (a call per guidance
  // branch, Wan) adds 'full_calls' and 'calls'.
  int full = -1;
  Resources resources;
  int calls = 1;
  Message make() const;
  static Progress parse(const Message& m);
};

// An RGB8 picture, rows top to bottom: a latent preview or a decoded frame.
struct Picture {
  int rank = 0;
  int step = 0;   // Preview: the step it shows
  int video = 0;  // Frame: which video of the job, and which frame of it
  int index = 0;
  int width = 0, height = 0;
  std::string rgb;  // width * height * 3 bytes
  Message make(Kind kind) const;
  static Picture parse(const Message& m);
};

struct LogLine {
  int rank = 0;
  std::string text;
  Message make() const;
  static LogLine parse(const Message& m);
};

struct Done {
  int rank = 0;
  double seconds_loading = 0, seconds_denoising = 0, seconds_decoding = 0;
  Resources resources;
  std::vector<std::string> outputs;  // files written
  Message make() const;
  static Done parse(const Message& m);
};

// Why a rank failed, as the user is told.
enum class ErrorKind { OutOfMemory, Crash, BadInput, Cancelled, LostPeer, Hung, Internal };
const char* error_kind_name(ErrorKind k);

struct Error {
  int rank = 0;
  ErrorKind kind = ErrorKind::Internal;
  std::string message;
  Message make() const;
  static Error parse(const Message& m);
};

Message heartbeat(int rank);
Message cancel();
// The next job for ranks that serve several (its job file's JSON text); job_text() reads it back.
Message next_job(const std::string& job_file_json);
std::string job_text(const Message& m);
// The rank a rank's message is about (every rank -> launcher message has one); ProtocolError if absent.
int rank_of(const Message& m);

}  // namespace studio::events
