// Sockets for the event protocol. The launcher listens (a Unix socket in a private folder on one
// machine; TCP when ranks run on several) and every rank connects once, says hello with the job's token,
// then streams its messages; the launcher may send Cancel back. Plain POSIX, no Qt, no LibTorch.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workers/events/protocol.h"

namespace studio::events {

// A random secret for one job (hex, from /dev/urandom). Ranks get it in the environment, never argv.
std::string random_token();

// One connected stream, either side. Reads never block; writes block until the frame is out.
class Connection {
 public:
  explicit Connection(int fd, std::string peer = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // Reads what has arrived and appends the whole messages to `out`. Returns false once the peer has
  // closed (or reset) the connection. ProtocolError for a malformed stream.
  bool read_available(std::vector<Message>& out);
  // Whole frame or nothing visible to the peer; false if the connection is gone.
  bool send(const Message& m);
  void close();

 private:
  int fd_;
  std::string peer_;
  Decoder decoder_;
};

// Where ranks send their events: "unix:/path/to/socket" or "tcp:HOST:PORT".
struct Endpoint {
  std::string text;
  static Endpoint parse(const std::string& text);  // std::invalid_argument naming the value
  bool is_unix() const { return text.rfind("unix:", 0) == 0; }
};

// Connects to the launcher (blocking, with a few seconds of retries while it starts).
std::unique_ptr<Connection> connect_to(const Endpoint& where);

class Listener {
 public:
  // A Unix socket at `path` (inside a folder only the user can enter), made 0600 before it listens;
  // the socket file is removed on destruction.
  static std::unique_ptr<Listener> unix_socket(const std::string& path);
  // TCP on `address` ("127.0.0.1", or an interface address for ranks on other machines); port 0 picks
  // a free one.
  static std::unique_ptr<Listener> tcp(const std::string& address, int port);
  ~Listener();

  int fd() const { return fd_; }
  Endpoint endpoint() const { return {endpoint_}; }
  // A pending connection, or nullptr when none is waiting.
  std::unique_ptr<Connection> accept();

 private:
  Listener() = default;
  int fd_ = -1;
  std::string endpoint_, socket_path_;
};

}  // namespace studio::events
