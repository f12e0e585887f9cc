#include "workers/events/channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace studio::events {

namespace {

std::runtime_error sys_error(const std::string& what) { return std::runtime_error(what + ": " + strerror(errno)); }

void set_nonblocking(int fd, bool on) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

}  // namespace

std::string random_token() {
  unsigned char bytes[16];
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::read(fd, bytes, sizeof bytes) != ssize_t(sizeof bytes)) {
    if (fd >= 0) ::close(fd);
    throw sys_error("cannot read /dev/urandom for the job's token");
  }
  ::close(fd);
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (unsigned char b : bytes) t += {hex[b >> 4], hex[b & 15]};
  return t;
}

Connection::Connection(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
Connection::~Connection() { close(); }

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Connection::read_available(std::vector<Message>& out) {
  if (fd_ < 0) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      decoder_.feed(buf, size_t(n));
      while (auto m = decoder_.next()) out.push_back(std::move(*m));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // 0: closed by the peer; other errors: reset
  }
}

bool Connection::send(const Message& m) {
  if (fd_ < 0) return false;
  const std::string bytes = encode(m);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

Endpoint Endpoint::parse(const std::string& text) {
  if (text.rfind("unix:/", 0) == 0 && text.size() > 6) return {text};
  if (text.rfind("tcp:", 0) == 0) {
    const auto colon = text.rfind(':');
    const std::string port = text.substr(colon + 1);
    if (colon > 4 && !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
        std::stoi(port) > 0 && std::stoi(port) < 65536)
      return {text};
  }
  throw std::invalid_argument("event endpoint '" + text + "' is neither unix:/PATH nor tcp:HOST:PORT");
}

std::unique_ptr<Connection> connect_to(const Endpoint& where) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int fd = -1;
    if (where.is_unix()) {
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      const std::string path = where.text.substr(5);
      if (path.size() >= sizeof a.sun_path) throw std::invalid_argument("socket path too long: " + path);
      std::strcpy(a.sun_path, path.c_str());
      fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return std::make_unique<Connection>(fd, path);
    } else {
      const auto colon = where.text.rfind(':');
      const std::string host = where.text.substr(4, colon - 4), port = where.text.substr(colon + 1);
      addrinfo hints{}, *res = nullptr;
      hints.ai_socktype = SOCK_STREAM;
      if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) == 0) {
        for (addrinfo* p = res; p; p = p->ai_next) {
          fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
          if (fd >= 0 && ::connect(fd, p->ai_addr, p->ai_addrlen) == 0) break;
          if (fd >= 0) ::close(fd);
          fd = -1;
        }
        ::freeaddrinfo(res);
      }
      if (fd >= 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return std::make_unique<Connection>(fd, host + ":" + port);
      }
    }
    const std::string why = strerror(errno);
    if (fd >= 0) ::close(fd);
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("cannot connect to the launcher's events at " + where.text + ": " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::unique_ptr<Listener> Listener::unix_socket(const std::string& path) {
  std::unique_ptr<Listener> l(new Listener);
  l->socket_path_ = path;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path)
    throw std::runtime_error("the events socket path " + path + " is too long; set TMPDIR to a shorter folder");
  std::strcpy(a.sun_path, l->socket_path_.c_str());
  l->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // The socket is created with the umask's mode; make it 0600 before anyone can connect.
  const mode_t old = ::umask(0177);
  const bool bound = l->fd_ >= 0 && ::bind(l->fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::umask(old);
  if (!bound || ::listen(l->fd_, 64) != 0) throw sys_error("cannot listen on " + l->socket_path_);
  set_nonblocking(l->fd_, true);
  l->endpoint_ = "unix:" + l->socket_path_;
  return l;
}

std::unique_ptr<Listener> Listener::tcp(const std::string& address, int port) {
  std::unique_ptr<Listener> l(new Listener);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("cannot listen for events on '" + address + "': not an IPv4 address");
  l->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(l->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l->fd_ < 0 || ::bind(l->fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l->fd_, 64) != 0)
    throw sys_error("cannot listen for events on " + address + ":" + std::to_string(port));
  socklen_t len = sizeof a;
  ::getsockname(l->fd_, reinterpret_cast<sockaddr*>(&a), &len);
  set_nonblocking(l->fd_, true);
  l->endpoint_ = "tcp:" + address + ":" + std::to_string(ntohs(a.sin_port));
  return l;
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  if (!socket_path_.empty()) std::filesystem::remove(socket_path_, ec);
}

std::unique_ptr<Connection> Listener::accept() {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC);
  if (fd < 0) return nullptr;
  std::string peer = "local";
  if (a.ss_family == AF_INET) {
    char ip[INET_ADDRSTRLEN] = {0};
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    peer = std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return std::make_unique<Connection>(fd, peer);
}

}  // namespace studio::events
