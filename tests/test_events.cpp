// The event protocol on its own: every message through the framing and back, and what the decoder does
// with truncated, oversized, unknown and malformed input; the Unix socket's permissions; a real
// connection through a listener.
#include <QtTest>

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

}  // namespace

class TestEvents : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void every_message_survives_the_framing() {
    Hello h{3, 4, "host-a", "cuda:1", "secret", 1234};
    Progress p{2, 7, 50, 1.25, {10, 20, 30, 40, 50, 60, 70}};
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
    QCOMPARE(all.size(), size_t(9));
    const auto h2 = Hello::parse(all[0]);
    QCOMPARE(h2.rank, 3);
    QCOMPARE(h2.world_size, 4);
    QCOMPARE(h2.host, std::string("host-a"));
    QCOMPARE(h2.token, std::string("secret"));
    QCOMPARE(h2.pid, int64_t(1234));
    QCOMPARE(Phase::parse(all[1]).phase, std::string("denoising"));
    const auto p2 = Progress::parse(all[2]);
    QCOMPARE(p2.step, 7);
    QCOMPARE(p2.resources.bytes_received, uint64_t(70));
    QCOMPARE(p2.resources.host_peak, uint64_t(50));
    const auto pic2 = Picture::parse(all[3]);
    QCOMPARE(pic2.rgb, pic.rgb);
    QCOMPARE(pic2.step, 7);
    QCOMPARE(LogLine::parse(all[4]).text, std::string("hello"));
    QCOMPARE(Done::parse(all[5]).outputs, d.outputs);
    const auto e = Error::parse(all[6]);
    QCOMPARE(int(e.kind), int(ErrorKind::OutOfMemory));
    QCOMPARE(rank_of(all[7]), 3);
    QCOMPARE(int(all[8].kind), int(Kind::Cancel));
  }

  void a_truncated_frame_waits_for_the_rest() {
    const std::string bytes = encode(Phase{0, "loading"}.make());
    Decoder d;
    d.feed(bytes.data(), bytes.size() - 1);
    QVERIFY(!d.next());
    QCOMPARE(d.buffered(), bytes.size() - 1);
    d.feed(bytes.data() + bytes.size() - 1, 1);
    QVERIFY(d.next());
    QCOMPARE(d.buffered(), size_t(0));
  }

  void oversized_frames_are_refused_before_allocation() {
    Decoder d;
    const std::string h = header(kProtocolVersion, uint8_t(Kind::Log), kMaxBody + 1, 0);
    d.feed(h.data(), h.size());
    QVERIFY(test::throws_with<ProtocolError>([&] { d.next(); }, {"body of 1048577 bytes", "over the limit"}));
    // The decoder refuses anything after a broken frame.
    QVERIFY(test::throws_with<ProtocolError>([&] { d.feed("x", 1); }, {"already broke the protocol"}));
    Decoder d2;
    const std::string h2 = header(kProtocolVersion, uint8_t(Kind::Frame), 2, 0xffffffffu);
    d2.feed(h2.data(), h2.size());
    QVERIFY(test::throws_with<ProtocolError>([&] { d2.next(); }, {"payload of 4294967295 bytes", "over the limit"}));
    Message big{Kind::Frame, {{"rank", 0}}, std::string(kMaxPayload + 1, 'x')};
    QVERIFY(test::throws_with<ProtocolError>([&] { encode(big); }, {"frame message payload", "over the limit"}));
  }

  void unknown_kinds_are_skipped() {
    const std::string bytes = header(kProtocolVersion, 200, 2, 3) + "{}abc" + encode(LogLine{1, "after"}.make());
    Decoder d;
    d.feed(bytes.data(), bytes.size());
    auto m = d.next();
    QVERIFY(m);
    QCOMPARE(LogLine::parse(*m).text, std::string("after"));
    QCOMPARE(d.skipped(), size_t(1));
  }

  void malformed_frames_say_what_is_wrong() {
    auto fails = [](const std::string& bytes, const char* part) {
      Decoder d;
      d.feed(bytes.data(), bytes.size());
      return test::throws_with<ProtocolError>([&] { d.next(); }, {part});
    };
    QVERIFY(fails("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "does not start with \"DITE\""));
    QVERIFY(fails(header(9, 1, 2, 0) + "{}", "protocol version 9 is not the supported version 1"));
    QVERIFY(fails(header(kProtocolVersion, 6, 5, 0) + "[1,2]", "log message is not a JSON object"));
    QVERIFY(fails(header(kProtocolVersion, 6, 4, 0) + "{\"a\"", "not a JSON object"));
    std::string reserved = header(kProtocolVersion, 6, 2, 0) + "{}";
    reserved[6] = 1;
    QVERIFY(fails(reserved, "reserved header bytes"));
  }

  void typed_messages_name_the_bad_field() {
    QVERIFY(test::throws_with<ProtocolError>([] { Progress::parse({Kind::Progress, {{"rank", 0}}, {}}); },
                                             {"progress message has no 'step' field"}));
    QVERIFY(test::throws_with<ProtocolError>(
        [] { Phase::parse({Kind::Phase, {{"rank", 0}, {"phase", 3}}, {}}); }, {"'phase' is 3, not of the expected type"}));
    QVERIFY(test::throws_with<ProtocolError>([] { rank_of({Kind::Log, {{"rank", -2}}, {}}); }, {"rank -2 is negative"}));
    QVERIFY(test::throws_with<ProtocolError>(
        [] { Picture::parse({Kind::Frame, {{"rank", 0}, {"video", 0}, {"index", 0}, {"width", 4}, {"height", 4}}, "abc"}); },
        {"4 x 4 pixels carries 3 payload bytes"}));
    QVERIFY(test::throws_with<ProtocolError>(
        [] { Error::parse({Kind::Error, {{"rank", 0}, {"kind", "meteor"}, {"message", ""}}, {}}); },
        {"unknown kind 'meteor'"}));
    QVERIFY(test::throws_with<ProtocolError>([] { Hello::parse(Phase{0, "x"}.make()); },
                                             {"expected a hello message, got phase"}));
  }

  void unix_socket_is_private_and_carries_messages() {
    char tmpl[] = "/tmp/test-events-XXXXXX";
    QVERIFY(::mkdtemp(tmpl));
    const std::string path = std::string(tmpl) + "/events.sock";
    {
      auto l = Listener::unix_socket(path);
      struct stat st {};
      QCOMPARE(::stat(path.c_str(), &st), 0);
      QCOMPARE(int(st.st_mode & 0777), 0600);
      auto client = connect_to(l->endpoint());
      std::unique_ptr<Connection> server;
      for (int i = 0; i < 100 && !server; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10)))
        server = l->accept();
      QVERIFY(server);
      Picture frame;
      frame.width = 640;
      frame.height = 480;
      frame.rgb = std::string(640 * 480 * 3, '\x10');
      // Larger than a socket buffer: it goes out in pieces while this thread reads them.
      bool sent = false;
      std::thread sender([&] { sent = client->send(frame.make(Kind::Frame)); });
      std::vector<Message> got;
      for (int i = 0; i < 2000 && got.empty(); ++i) {
        QVERIFY(server->read_available(got));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      sender.join();
      QVERIFY(sent);
      QCOMPARE(got.size(), size_t(1));
      QCOMPARE(Picture::parse(got[0]).rgb.size(), size_t(640 * 480 * 3));
      client->close();
      got.clear();
      bool open = true;
      for (int i = 0; i < 100 && open; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10)))
        open = server->read_available(got);
      QVERIFY(!open);  // the peer's close is seen
    }
    QVERIFY(!std::filesystem::exists(path));  // the listener removes its socket
    std::filesystem::remove_all(tmpl);
  }

  void endpoints_are_checked() {
    QVERIFY(Endpoint::parse("unix:/tmp/x.sock").is_unix());
    QVERIFY(!Endpoint::parse("tcp:10.0.0.1:29501").is_unix());
    for (const char* bad : {"unix:", "tcp:host", "tcp::80", "tcp:h:0", "tcp:h:99999", "http://x"})
      QVERIFY2(test::throws_with<std::invalid_argument>([&] { Endpoint::parse(bad); }, {"neither unix:/PATH nor tcp:HOST:PORT"}),
               bad);
    QCOMPARE(random_token().size(), size_t(32));
    QVERIFY(random_token() != random_token());
  }
};

QTEST_GUILESS_MAIN(TestEvents)
#include "test_events.moc"
