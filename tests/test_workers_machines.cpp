// A job over TCP between two launchers, as two machines run it: on loopback (with a stranger that lacks the
// job's token, and a rank lost on the other machine), then in two network namespaces joined by a veth pair.
// Every test checks that no process is left behind.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <functional>
#include <system_error>

#include "worker_runs.h"
#include "workers/events/messages.h"

using namespace studio;
using namespace studio::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Whether nothing listens on (or holds) 127.0.0.1:`port` now.
bool port_free(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool free = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return free;
}

// A --master_port for a job over TCP: it and the next port (the events') free now, both below the kernel's
// ephemeral range (32768 on), where no outgoing connection can take them before the launcher listens.
int free_master_port() {
  for (int i = 0; i < 1000; ++i) {
    const int port = 20000 + int((unsigned(::getpid()) * 7919u + unsigned(i) * 104729u) % 12000u);
    if (port_free(port) && port_free(port + 1)) return port;
  }
  throw std::runtime_error("no two adjacent free ports between 20000 and 32000 on 127.0.0.1");
}

// A TCP connection to 127.0.0.1:`port`, tried `attempts` times kRetryEvery apart; -1 if none was made.
constexpr std::chrono::milliseconds kRetryEvery{100};
int connect_loopback(int port, int attempts) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < attempts; ++i) {
    const auto next = std::chrono::steady_clock::now() + kRetryEvery;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
    std::this_thread::sleep_until(next);
  }
  return -1;
}

// True once the peer has closed `fd` (within `ms`); whatever it sends meanwhile is read and dropped.
bool wait_for_close(int fd, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
}

TEST_F(Workers, a_second_machine_joins_with_the_token) {
  // Two launchers over TCP on loopback, as two machines would run them; a stranger without the token
  // is dropped and logged.
  const int port = free_master_port();
  const Args machine = demo_job(2) + Args{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr", "127.0.0.1",
                                          "--master_port", std::to_string(port)};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "0123456789abcdef0123456789abcdef"}};
  test::Process first, second;
  first.start(kLaunch, machine + Args{"--node_rank", "0", "--events_log", path("tcp.jsonl"), "--output", path("tcp.mp4")},
              env);
  ASSERT_TRUE(first.wait_for_stderr("starting 1 rank on machine 0 of 2", kRunMs)) << first.err();
  const int stranger = connect_loopback(port + 1, 100);
  ASSERT_GE(stranger, 0) << "cannot connect to the events port " << port + 1;
  events::Hello h{1, 2, "elsewhere", "cpu", "not-the-token", 1};
  const std::string bytes = events::encode(h.make());
  ::send(stranger, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  const bool dropped = wait_for_close(stranger, 10000);
  ::close(stranger);
  ASSERT_TRUE(dropped);
  ASSERT_TRUE(first.wait_for_stderr("it did not present the job's token", kRunMs)) << first.err();
  second.start(kLaunch, machine + Args{"--node_rank", "1"}, env);
  const auto r1 = test::finish(first, kRunMs), r2 = test::finish(second, kRunMs);
  ASSERT_EQ(r1.code, 0) << r1.err;
  ASSERT_EQ(r2.code, 0) << r2.err;
  const auto all = read_events(path("tcp.jsonl"));
  EXPECT_EQ(of_kind(all, "hello").size(), size_t(2));
  EXPECT_EQ(of_kind(all, "done").size(), size_t(2));
  EXPECT_GT(file_size(path("tcp.mp4")), 1000);
  EXPECT_TRUE(all_gone(pids_of(all)));
}

TEST_F(Workers, a_rank_lost_on_another_machine_is_named) {
  // Two launchers over loopback TCP; the rank of the second "machine" is killed mid-run. The first
  // launcher names that rank (not its partner, which only lost its peer), and both stop.
  const int port = free_master_port();
  const Args machine = demo_job(1000) + Args{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr", "127.0.0.1",
                                             "--master_port", std::to_string(port)};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "00112233445566778899aabbccddeeff"}};
  const std::string log = path("remote.jsonl");
  test::Process first, second;
  first.start(kLaunch, machine + Args{"--node_rank", "0", "--events_log", log}, env);
  second.start(kLaunch, machine + Args{"--node_rank", "1"}, env);
  ASSERT_TRUE(first.wait_for_stderr("step 2/1000", kRunMs)) << first.err();
  const auto pids = pids_of(read_events(log));
  ASSERT_EQ(pids.size(), size_t(2));
  const int64_t victim = pid_of_rank(read_events(log), 1);
  ::kill(pid_t(victim), SIGKILL);
  const auto r1 = test::finish(first, 30000), r2 = test::finish(second, 30000);
  EXPECT_TRUE(r1.code != 0 && r2.code != 0);
  EXPECT_TRUE(test::contains(r1.err, "rank 1 (pid " + std::to_string(victim)) &&
              test::contains(r1.err, "closed its events connection without a result"))
      << r1.err;
  EXPECT_TRUE(test::contains(r2.err, "was killed by signal 9")) << r2.err;
  EXPECT_TRUE(all_gone(pids));
}

TEST_F(Workers, two_machines_in_network_namespaces) {
  // Two network namespaces joined by a veth pair stand for two machines with their own addresses.
  const std::string a = "ditA" + std::to_string(::getpid()), b = "ditB" + std::to_string(::getpid());
  auto ip = [](const Args& args) {
    try {
      return test::run("ip", args, 30000).code == 0;
    } catch (const std::system_error&) {
      return false;  // no iproute2
    }
  };
  if (!ip({"netns", "add", a}))
    STUDIO_SKIP_WITHOUT_PRIVILEGE("cannot create network namespaces here (needs root and iproute2)");
  ip({"netns", "add", b});
  struct Cleanup {
    std::function<void()> run;
    ~Cleanup() { run(); }
  } cleanup{[&] {
    ip({"netns", "del", a});
    ip({"netns", "del", b});
  }};
  auto last8 = [](const std::string& s) { return s.substr(s.size() > 8 ? s.size() - 8 : 0); };
  const std::string va = "v" + last8(a), vb = "v" + last8(b);
  ASSERT_TRUE(ip({"link", "add", va, "type", "veth", "peer", "name", vb}));
  ASSERT_TRUE(ip({"link", "set", va, "netns", a}) && ip({"link", "set", vb, "netns", b}));
  ASSERT_TRUE(ip({"-n", a, "addr", "add", "10.231.0.1/24", "dev", va}) &&
              ip({"-n", b, "addr", "add", "10.231.0.2/24", "dev", vb}));
  for (const auto& [ns, dev] : {std::pair{a, va}, std::pair{b, vb}}) {
    ASSERT_TRUE(ip({"-n", ns, "link", "set", dev, "up"}));
    ASSERT_TRUE(ip({"-n", ns, "link", "set", "lo", "up"}));
  }
  const Args job = demo_job(2) + Args{"--use_cfg_parallel", "--nnodes", "2", "--master_addr", "10.231.0.1",
                                      "--master_port", "29600"};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "fedcba9876543210fedcba9876543210"}};
  test::Process first, second;
  first.start("ip", Args{"netns", "exec", a, kLaunch} + job +
                        Args{"--node_rank", "0", "--events_log", path("netns.jsonl"), "--save_tensors",
                             path("netns.safetensors")},
              env);
  second.start("ip", Args{"netns", "exec", b, kLaunch} + job + Args{"--node_rank", "1"}, env);
  const auto r1 = test::finish(first, kRunMs), r2 = test::finish(second, kRunMs);
  ASSERT_EQ(r1.code, 0) << r1.err;
  ASSERT_EQ(r2.code, 0) << r2.err;
  const auto all = read_events(path("netns.jsonl"));
  EXPECT_EQ(of_kind(all, "done").size(), size_t(2));
  EXPECT_TRUE(fs::exists(path("netns.safetensors")));
  EXPECT_TRUE(all_gone(pids_of(all)));
}

}  // namespace
