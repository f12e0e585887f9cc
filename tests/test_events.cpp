// The event protocol on its own: every message through the framing and back, and what the decoder does
// with truncated, oversized, unknown and malformed input; the Unix socket's permissions; a real
// connection through a listener.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "support.h"
#include "workers/events/channel.h"
#include "workers/events/messages.h"

using namespace studio;
using namespace studio::events;

namespace {

// Feeds `bytes` one at a time and collects what comes out.
std::vector<Message> decode_bytewise(const std::string& bytes) {
  Decoder d;
  std::vector<Message> out;
  for (char c : bytes) {
    d.feed(&c, 1);
    while (auto m = d.next()) out.push_back(std::move(*m));
  }
  return out;
}

std::string header(uint8_t version, uint8_t kind, uint32_t body, uint32_t payload) {
  std::string h = "DITE";
  h += char(version);
  h += char(kind);
  h.append(2, '\0');
  for (uint32_t v : {body, payload})
    for (int i = 0; i < 4; ++i) h += char((v >> (8 * i)) & 0xff);
  return h;
}

TEST(Events, every_message_survives_the_framing) {
  Hello h{3, 4, "host-a", "cuda:1", "secret", 1234};
  Progress p{2, 7, 50, 1.25, -1, {10, 20, 30, 40, 50, 60, 70}};
  Picture pic;
  pic.rank = 0;
  pic.step = 7;
  pic.width = 2;
  pic.height = 3;
  pic.rgb = std::string(18, '\x7f');
  Done d;
  d.rank = 1;
  d.seconds_denoising = 3.5;
  d.outputs = {"a.mp4", "a.safetensors"};
  const std::string bytes = encode(h.make()) + encode(Phase{1, "denoising"}.make()) + encode(p.make()) +
                            encode(pic.make(Kind::Preview)) + encode(LogLine{2, "hello"}.make()) + encode(d.make()) +
                            encode(Error{3, ErrorKind::OutOfMemory, "out of memory"}.make()) + encode(heartbeat(3)) +
                            encode(cancel());
  const auto all = decode_bytewise(bytes);
  ASSERT_EQ(all.size(), size_t(9));
  const auto h2 = Hello::parse(all[0]);
  ASSERT_EQ(h2.rank, 3);
  ASSERT_EQ(h2.world_size, 4);
  ASSERT_EQ(h2.host, std::string("host-a"));
  ASSERT_EQ(h2.token, std::string("secret"));
  ASSERT_EQ(h2.pid, int64_t(1234));
  ASSERT_EQ(Phase::parse(all[1]).phase, std::string("denoising"));
  const auto p2 = Progress::parse(all[2]);
  ASSERT_EQ(p2.step, 7);
  ASSERT_EQ(p2.full, -1);
  ASSERT_FALSE(all[2].body.contains("full"));  // no step cache: not said at all
  // With a step cache, whether the step ran every block; anything but a boolean is refused.
  for (int full : {0, 1}) {
    Progress cached = p;
    cached.full = full;
    ASSERT_EQ(Progress::parse(cached.make()).full, full);
  }
  auto wrong = p.make();
  wrong.body["full"] = 1;
  EXPECT_THROW(Progress::parse(wrong), ProtocolError);
  ASSERT_EQ(p2.resources.bytes_received, uint64_t(70));
  ASSERT_EQ(p2.resources.host_peak, uint64_t(50));
  const auto pic2 = Picture::parse(all[3]);
  ASSERT_EQ(pic2.rgb, pic.rgb);
  ASSERT_EQ(pic2.step, 7);
  ASSERT_EQ(LogLine::parse(all[4]).text, std::string("hello"));
  ASSERT_EQ(Done::parse(all[5]).outputs, d.outputs);
  const auto e = Error::parse(all[6]);
  ASSERT_EQ(int(e.kind), int(ErrorKind::OutOfMemory));
  ASSERT_EQ(rank_of(all[7]), 3);
  ASSERT_EQ(int(all[8].kind), int(Kind::Cancel));
}

// A phase may say how far into it a rank is (the decode's parts) and what it holds then; a count that cannot be
// is refused.
TEST(Events, a_phase_counts_its_parts) {
  const auto plain = Phase::parse(Phase{1, "loading"}.make());
  EXPECT_EQ(plain.parts, 0);
  EXPECT_FALSE((Phase{1, "loading"}.make().body.contains("parts")));
  const auto part = Phase::parse(Phase{1, "decoding", 3, 12}.make());
  EXPECT_EQ(part.phase, "decoding");
  EXPECT_EQ(part.part, 3);
  EXPECT_EQ(part.parts, 12);
  EXPECT_FALSE(part.resources);  // none given, none on the wire
  Resources memory;
  memory.host_rss = uint64_t(3) << 30, memory.host_peak = uint64_t(5) << 30, memory.bytes_sent = 7;
  const auto measured = Phase::parse(Phase{1, "decoding", 4, 12, memory}.make());
  ASSERT_TRUE(measured.resources);
  EXPECT_EQ(measured.resources->host_rss, memory.host_rss);
  EXPECT_EQ(measured.resources->host_peak, memory.host_peak);
  EXPECT_EQ(measured.resources->bytes_sent, 7u);
  auto bad = Phase{1, "decoding", 3, 12}.make();
  bad.body["part"] = 13;
  EXPECT_TRUE(test::throws_with<ProtocolError>([&] { Phase::parse(bad); }, {"part 13 of 12 parts"}));
}

TEST(Events, a_truncated_frame_waits_for_the_rest) {
  const std::string bytes = encode(Phase{0, "loading"}.make());
  Decoder d;
  d.feed(bytes.data(), bytes.size() - 1);
  ASSERT_FALSE(d.next());
  ASSERT_EQ(d.buffered(), bytes.size() - 1);
  d.feed(bytes.data() + bytes.size() - 1, 1);
  ASSERT_TRUE(d.next());
  ASSERT_EQ(d.buffered(), size_t(0));
}

TEST(Events, oversized_frames_are_refused_before_allocation) {
  Decoder d;
  const std::string h = header(kProtocolVersion, uint8_t(Kind::Log), kMaxBody + 1, 0);
  d.feed(h.data(), h.size());
  ASSERT_TRUE(test::throws_with<ProtocolError>([&] { d.next(); }, {"body of 1048577 bytes", "over the limit"}));
  // The decoder refuses anything after a broken frame.
  ASSERT_TRUE(test::throws_with<ProtocolError>([&] { d.feed("x", 1); }, {"already broke the protocol"}));
  Decoder d2;
  const std::string h2 = header(kProtocolVersion, uint8_t(Kind::Frame), 2, 0xffffffffu);
  d2.feed(h2.data(), h2.size());
  ASSERT_TRUE(test::throws_with<ProtocolError>([&] { d2.next(); }, {"payload of 4294967295 bytes", "over the limit"}));
  Message big{Kind::Frame, {{"rank", 0}}, std::string(kMaxPayload + 1, 'x')};
  ASSERT_TRUE(test::throws_with<ProtocolError>([&] { encode(big); }, {"frame message payload", "over the limit"}));
}

TEST(Events, unknown_kinds_are_skipped) {
  const std::string bytes = header(kProtocolVersion, 200, 2, 3) + "{}abc" + encode(LogLine{1, "after"}.make());
  Decoder d;
  d.feed(bytes.data(), bytes.size());
  auto m = d.next();
  ASSERT_TRUE(m);
  ASSERT_EQ(LogLine::parse(*m).text, std::string("after"));
  ASSERT_EQ(d.skipped(), size_t(1));
}

TEST(Events, malformed_frames_say_what_is_wrong) {
  auto fails = [](const std::string& bytes, const char* part) {
    Decoder d;
    d.feed(bytes.data(), bytes.size());
    return test::throws_with<ProtocolError>([&] { d.next(); }, {part});
  };
  ASSERT_TRUE(fails("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "does not start with \"DITE\""));
  ASSERT_TRUE(fails(header(9, 1, 2, 0) + "{}", "protocol version 9 is not the supported version 1"));
  ASSERT_TRUE(fails(header(kProtocolVersion, 6, 5, 0) + "[1,2]", "log message is not a JSON object"));
  ASSERT_TRUE(fails(header(kProtocolVersion, 6, 4, 0) + "{\"a\"", "not a JSON object"));
  std::string reserved = header(kProtocolVersion, 6, 2, 0) + "{}";
  reserved[6] = 1;
  ASSERT_TRUE(fails(reserved, "reserved header bytes"));
}

TEST(Events, typed_messages_name_the_bad_field) {
  ASSERT_TRUE(test::throws_with<ProtocolError>([] { Progress::parse({Kind::Progress, {{"rank", 0}}, {}}); },
                                               {"progress message has no 'step' field"}));
  ASSERT_TRUE(test::throws_with<ProtocolError>(
      [] { Phase::parse({Kind::Phase, {{"rank", 0}, {"phase", 3}}, {}}); }, {"'phase' is 3, not of the expected type"}));
  ASSERT_TRUE(test::throws_with<ProtocolError>([] { rank_of({Kind::Log, {{"rank", -2}}, {}}); }, {"rank -2 is negative"}));
  ASSERT_TRUE(test::throws_with<ProtocolError>(
      [] { Picture::parse({Kind::Frame, {{"rank", 0}, {"video", 0}, {"index", 0}, {"width", 4}, {"height", 4}}, "abc"}); },
      {"4 x 4 pixels carries 3 payload bytes"}));
  ASSERT_TRUE(test::throws_with<ProtocolError>(
      [] { Error::parse({Kind::Error, {{"rank", 0}, {"kind", "meteor"}, {"message", ""}}, {}}); },
      {"unknown kind 'meteor'"}));
  ASSERT_TRUE(test::throws_with<ProtocolError>([] { Hello::parse(Phase{0, "x"}.make()); },
                                               {"expected a hello message, got phase"}));
}

TEST(Events, unix_socket_is_private_and_carries_messages) {
  char tmpl[] = "/tmp/test-events-XXXXXX";
  ASSERT_TRUE(::mkdtemp(tmpl));
  const std::string path = std::string(tmpl) + "/events.sock";
  {
    auto l = Listener::unix_socket(path);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    ASSERT_EQ(int(st.st_mode & 0777), 0600);
    auto client = connect_to(l->endpoint());
    std::unique_ptr<Connection> server;
    for (int i = 0; i < 100 && !server; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10)))
      server = l->accept();
    ASSERT_TRUE(server);
    Picture frame;
    frame.width = 640;
    frame.height = 480;
    frame.rgb = std::string(640 * 480 * 3, '\x10');
    // Larger than a socket buffer: it goes out in pieces while this thread reads them.
    bool sent = false;
    std::thread sender([&] { sent = client->send(frame.make(Kind::Frame)); });
    std::vector<Message> got;
    bool open = true;
    for (int i = 0; i < 2000 && got.empty() && open; ++i) {
      open = server->read_available(got);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    sender.join();
    ASSERT_TRUE(open);
    ASSERT_TRUE(sent);
    ASSERT_EQ(got.size(), size_t(1));
    ASSERT_EQ(Picture::parse(got[0]).rgb.size(), size_t(640 * 480 * 3));
    client->close();
    got.clear();
    for (int i = 0; i < 100 && open; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10)))
      open = server->read_available(got);
    ASSERT_FALSE(open);  // the peer's close is seen
  }
  ASSERT_FALSE(std::filesystem::exists(path));  // the listener removes its socket
  std::filesystem::remove_all(tmpl);
}

TEST(Events, endpoints_are_checked) {
  ASSERT_TRUE(Endpoint::parse("unix:/tmp/x.sock").is_unix());
  ASSERT_FALSE(Endpoint::parse("tcp:10.0.0.1:29501").is_unix());
  for (const char* bad : {"unix:", "tcp:host", "tcp::80", "tcp:h:0", "tcp:h:99999", "http://x"})
    ASSERT_TRUE(test::throws_with<std::invalid_argument>([&] { Endpoint::parse(bad); },
                                                         {"neither unix:/PATH nor tcp:HOST:PORT"}))
        << bad;
  ASSERT_EQ(random_token().size(), size_t(32));
  ASSERT_TRUE(random_token() != random_token());
}

}  // namespace
