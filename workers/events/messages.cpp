#include "workers/events/messages.h"

namespace studio::events {

namespace {

using nlohmann::json;

const json& field(const Message& m, const char* name) {
  auto it = m.body.find(name);
  if (it == m.body.end())
    throw ProtocolError(std::string(kind_name(m.kind)) + " message has no '" + name + "' field");
  return *it;
}

template <typename T>
T get(const Message& m, const char* name) {
  const json& v = field(m, name);
  bool ok = false;
  if constexpr (std::is_same_v<T, std::string>) ok = v.is_string();
  else if constexpr (std::is_same_v<T, double>) ok = v.is_number();
  else if constexpr (std::is_same_v<T, bool>) ok = v.is_boolean();
  else if constexpr (std::is_unsigned_v<T>) ok = v.is_number_unsigned();
  else ok = v.is_number_integer();
  if (!ok) throw ProtocolError(std::string(kind_name(m.kind)) + " message: '" + name + "' is " + v.dump(-1).substr(0, 40) +
                               ", not of the expected type");
  if constexpr (std::is_same_v<T, int>) {
    const int64_t x = v.get<int64_t>();
    if (x < -(1 << 30) || x > (1 << 30))
      throw ProtocolError(std::string(kind_name(m.kind)) + " message: '" + name + "' = " + std::to_string(x) +
                          " is out of range");
  }
  return v.get<T>();
}

int rank_field(const Message& m) {
  const int r = get<int>(m, "rank");
  if (r < 0) throw ProtocolError(std::string(kind_name(m.kind)) + " message: rank " + std::to_string(r) + " is negative");
  return r;
}

void put(json& b, const Resources& r) {
  b["device_allocated"] = r.device_allocated;
  b["device_reserved"] = r.device_reserved;
  b["device_peak"] = r.device_peak;
  b["host_rss"] = r.host_rss;
  b["host_peak"] = r.host_peak;
  b["bytes_sent"] = r.bytes_sent;
  b["bytes_received"] = r.bytes_received;
}

Resources read_resources(const Message& m) {
  Resources r;
  r.device_allocated = get<uint64_t>(m, "device_allocated");
  r.device_reserved = get<uint64_t>(m, "device_reserved");
  r.device_peak = get<uint64_t>(m, "device_peak");
  r.host_rss = get<uint64_t>(m, "host_rss");
  r.host_peak = get<uint64_t>(m, "host_peak");
  r.bytes_sent = get<uint64_t>(m, "bytes_sent");
  r.bytes_received = get<uint64_t>(m, "bytes_received");
  return r;
}

void expect(const Message& m, Kind k) {
  if (m.kind != k)
    throw ProtocolError(std::string("expected a ") + kind_name(k) + " message, got " + kind_name(m.kind));
}

constexpr const char* kErrorKinds[] = {"out_of_memory", "crash", "bad_input", "cancelled", "lost_peer", "hung",
                                       "internal"};

}  // namespace

const char* error_kind_name(ErrorKind k) { return kErrorKinds[int(k)]; }

Message Hello::make() const {
  return {Kind::Hello,
          {{"rank", rank}, {"world_size", world_size}, {"host", host}, {"pid", pid}, {"device", device},
           {"protocol", protocol}, {"token", token}},
          {}};
}

Hello Hello::parse(const Message& m) {
  expect(m, Kind::Hello);
  Hello h;
  h.rank = rank_field(m);
  h.world_size = get<int>(m, "world_size");
  h.host = get<std::string>(m, "host");
  h.pid = get<int64_t>(m, "pid");
  h.device = get<std::string>(m, "device");
  h.protocol = get<int>(m, "protocol");
  h.token = get<std::string>(m, "token");
  return h;
}

Message Phase::make() const {
  Message m{Kind::Phase, {{"rank", rank}, {"phase", phase}}, {}};
  if (parts > 0) m.body.update({{"part", part}, {"parts", parts}});
  if (resources) put(m.body, *resources);
  return m;
}

Phase Phase::parse(const Message& m) {
  expect(m, Kind::Phase);
  Phase p{rank_field(m), get<std::string>(m, "phase")};
  if (m.body.contains("parts")) {
    p.part = get<int>(m, "part"), p.parts = get<int>(m, "parts");
    if (p.parts < 1 || p.part < 0 || p.part > p.parts)
      throw ProtocolError("phase: part " + std::to_string(p.part) + " of " + std::to_string(p.parts) +
                          " parts; expected 0 <= part <= parts, parts >= 1");
  }
  if (m.body.contains("host_rss")) p.resources = read_resources(m);
  return p;
}

Message Progress::make() const {
  Message m{Kind::Progress, {{"rank", rank}, {"step", step}, {"total", total}, {"seconds", seconds}}, {}};
  if (full >= 0) m.body["full"] = full == calls;
  if (full >= 0 && calls > 1) m.body.update({{"full_calls", full}, {"calls", calls}});
  put(m.body, resources);
  return m;
}

Progress Progress::parse(const Message& m) {
  expect(m, Kind::Progress);
  Progress p;
  p.rank = rank_field(m);
  p.step = get<int>(m, "step");
  p.total = get<int>(m, "total");
  p.seconds = get<double>(m, "seconds");
  if (m.body.contains("full")) p.full = get<bool>(m, "full") ? 1 : 0;
  if (m.body.contains("calls")) {
    p.calls = get<int>(m, "calls");
    const int full = get<int>(m, "full_calls");
    if (p.full < 0 || p.calls < 1 || full < 0 || full > p.calls || (full == p.calls) != (p.full == 1))
      throw ProtocolError("progress message: full_calls " + std::to_string(full) + " of " + std::to_string(p.calls) +
                          " calls does not agree with full = " +
                          (p.full < 0 ? "(absent)" : p.full == 1 ? "true" : "false"));
    p.full = full;
  }
  p.resources = read_resources(m);
  return p;
}

Message Picture::make(Kind kind) const {
  Message m{kind, {{"rank", rank}, {"width", width}, {"height", height}}, rgb};
  if (kind == Kind::Preview) m.body["step"] = step;
  else m.body.update({{"video", video}, {"index", index}});
  return m;
}

Picture Picture::parse(const Message& m) {
  if (m.kind != Kind::Preview && m.kind != Kind::Frame)
    throw ProtocolError(std::string("expected a preview or frame message, got ") + kind_name(m.kind));
  Picture p;
  p.rank = rank_field(m);
  if (m.kind == Kind::Preview) {
    p.step = get<int>(m, "step");
  } else {
    p.video = get<int>(m, "video");
    p.index = get<int>(m, "index");
  }
  p.width = get<int>(m, "width");
  p.height = get<int>(m, "height");
  if (p.width <= 0 || p.height <= 0 || uint64_t(p.width) * uint64_t(p.height) * 3 != m.payload.size())
    throw ProtocolError(std::string(kind_name(m.kind)) + " message of " + std::to_string(p.width) + " x " +
                        std::to_string(p.height) + " pixels carries " + std::to_string(m.payload.size()) +
                        " payload bytes; RGB8 needs width * height * 3");
  p.rgb = m.payload;
  return p;
}

Message LogLine::make() const { return {Kind::Log, {{"rank", rank}, {"text", text}}, {}}; }

LogLine LogLine::parse(const Message& m) {
  expect(m, Kind::Log);
  return {rank_field(m), get<std::string>(m, "text")};
}

Message Done::make() const {
  Message m{Kind::Done,
            {{"rank", rank}, {"seconds_loading", seconds_loading}, {"seconds_denoising", seconds_denoising},
             {"seconds_decoding", seconds_decoding}, {"outputs", outputs}},
            {}};
  put(m.body, resources);
  return m;
}

Done Done::parse(const Message& m) {
  expect(m, Kind::Done);
  Done d;
  d.rank = rank_field(m);
  d.seconds_loading = get<double>(m, "seconds_loading");
  d.seconds_denoising = get<double>(m, "seconds_denoising");
  d.seconds_decoding = get<double>(m, "seconds_decoding");
  d.resources = read_resources(m);
  const json& outs = field(m, "outputs");
  if (!outs.is_array()) throw ProtocolError("done message: 'outputs' is not a list");
  for (const auto& o : outs) {
    if (!o.is_string()) throw ProtocolError("done message: an entry of 'outputs' is not a string");
    d.outputs.push_back(o.get<std::string>());
  }
  return d;
}

Message Error::make() const {
  return {Kind::Error, {{"rank", rank}, {"kind", error_kind_name(kind)}, {"message", message}}, {}};
}

Error Error::parse(const Message& m) {
  expect(m, Kind::Error);
  Error e;
  e.rank = rank_field(m);
  const std::string k = get<std::string>(m, "kind");
  int i = 0;
  while (i < int(std::size(kErrorKinds)) && k != kErrorKinds[i]) ++i;
  if (i == int(std::size(kErrorKinds))) throw ProtocolError("error message: unknown kind '" + k.substr(0, 40) + "'");
  e.kind = ErrorKind(i);
  e.message = get<std::string>(m, "message");
  return e;
}

Message heartbeat(int rank) { return {Kind::Heartbeat, {{"rank", rank}}, {}}; }
Message cancel() { return {Kind::Cancel, json::object(), {}}; }
Message next_job(const std::string& job_file_json) { return {Kind::Job, {{"job", job_file_json}}, {}}; }
std::string job_text(const Message& m) {
  expect(m, Kind::Job);
  return get<std::string>(m, "job");
}

int rank_of(const Message& m) { return rank_field(m); }

}  // namespace studio::events
