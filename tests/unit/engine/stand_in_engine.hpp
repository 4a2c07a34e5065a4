#pragma once
// A stand-in Docker engine for unit tests: answers GETs from a table on a unix socket of the
// test's own, each connection on a thread of its own (as dockerd serves them), keep-alive.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurun {

class StandInEngine {
 public:
  struct Answer {
    int status = 200;
    std::string body;
    std::chrono::milliseconds delay{0};  // before the answer is written
  };
  // `silent`: reads requests, never answers.
  explicit StandInEngine(std::map<std::string, Answer> answers, bool silent = false)
      : answers_(std::move(answers)), silent_(silent) {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "gpurun-engine-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = pattern;
    path_ = dir_ + "/d.sock";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof address.sun_path - 1);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 16) != 0)
      throw std::runtime_error("bind/listen");
    acceptor_ = std::thread([this] { accept_all(); });
  }
  ~StandInEngine() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    {
      std::lock_guard lock(mutex_);
      for (const int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& t : servers_) t.join();
    for (const int fd : connections_) ::close(fd);
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }
  // The request lines received ("GET /_ping HTTP/1.1"), in the order they came.
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t connections() {
    std::lock_guard lock(mutex_);
    return connections_.size();
  }

 private:
  void accept_all() {
    for (;;) {
      const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) return;
      std::lock_guard lock(mutex_);
      connections_.push_back(connection);
      servers_.emplace_back([this, connection] { serve(connection); });
    }
  }
  void serve(int connection) {
    std::string pending;
    char buffer[4096];
    for (;;) {
      const auto end = pending.find("\r\n\r\n");
      if (end == std::string::npos) {
        const ssize_t n = ::read(connection, buffer, sizeof buffer);
        if (n <= 0) break;
        pending.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      const std::string head = pending.substr(0, end);
      pending.erase(0, end + 4);
      const std::string line = head.substr(0, head.find("\r\n"));
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(line);
      }
      if (silent_) continue;
      const std::string target = line.substr(4, line.rfind(' ') - 4);
      const auto it = answers_.find(target);
      const Answer answer = it != answers_.end() ? it->second : Answer{404, R"({"message":"page not found"})"};
      std::this_thread::sleep_for(answer.delay);
      const std::string response = "HTTP/1.1 " + std::to_string(answer.status) +
                                   " X\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\nContent-Length: " +
                                   std::to_string(answer.body.size()) + "\r\n\r\n" + answer.body;
      if (::send(connection, response.data(), response.size(), MSG_NOSIGNAL) < 0) break;  // the client may be gone
    }
    // (closed by the destructor, after the join: its number is not reused meanwhile)
  }

  std::map<std::string, Answer> answers_;
  bool silent_;
  std::string dir_, path_;
  int listener_ = -1;
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> connections_;
  std::vector<std::thread> servers_;
  std::vector<std::string> requests_;
};

}  // namespace gpurun
