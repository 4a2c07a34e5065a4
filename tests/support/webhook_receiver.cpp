#include "support/webhook_receiver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace gpurun::test {
namespace {

// The request's head and body: reads until the head's end and Content-Length bytes after it.
bool read_request(int fd, std::string& head, std::string& body) {
  std::string data;
  char buffer[4096];
  std::size_t head_end = std::string::npos;
  std::size_t length = 0;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        head = data.substr(0, head_end);
        const std::size_t at = head.find("Content-Length: ");
        if (at != std::string::npos) length = std::strtoul(head.c_str() + at + 16, nullptr, 10);
      }
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + length) {
      body = data.substr(head_end + 4, length);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    data.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

WebhookReceiver::WebhookReceiver(std::deque<int> statuses) : statuses_(std::move(statuses)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the socket API's own casts
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::listen(listener_, 16) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
    throw std::runtime_error("the webhook receiver cannot listen on 127.0.0.1");
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

WebhookReceiver::~WebhookReceiver() {
  {
    const std::lock_guard hold(mutex_);
    stopping_ = true;
  }
  thread_.join();
  ::close(listener_);
}

std::string WebhookReceiver::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

std::vector<std::string> WebhookReceiver::bodies() const {
  const std::lock_guard hold(mutex_);
  return bodies_;
}

std::vector<std::string> WebhookReceiver::requests() const {
  const std::lock_guard hold(mutex_);
  return heads_;
}

void WebhookReceiver::serve() {
  while (true) {
    {
      const std::lock_guard hold(mutex_);
      if (stopping_) return;
    }
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string head;
    std::string body;
    int status = 200;
    if (read_request(fd, head, body)) {
      const std::lock_guard hold(mutex_);
      heads_.push_back(head);
      bodies_.push_back(body);
      if (!statuses_.empty()) {
        status = statuses_.front();
        statuses_.pop_front();
      }
    }
    const std::string reply =
        "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    [[maybe_unused]] const ssize_t sent = ::write(fd, reply.data(), reply.size());
    ::close(fd);
  }
}

}  // namespace gpurun::test
