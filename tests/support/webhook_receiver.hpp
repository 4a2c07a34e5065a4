#pragma once
// A webhook's other end for the notification tests: an HTTP server on 127.0.0.1 (a free port)
// that keeps every POST's body and answers with the statuses it is given, then 200.
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpurun::test {

class WebhookReceiver {
 public:
  explicit WebhookReceiver(std::deque<int> statuses = {});
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  std::string url() const;                    // http://127.0.0.1:PORT/hook
  std::vector<std::string> bodies() const;    // every request's body, in order
  std::vector<std::string> requests() const;  // every request's head (request line and headers)

 private:
  void serve();
  int listener_ = -1;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::deque<int> statuses_;
  std::vector<std::string> bodies_;
  std::vector<std::string> heads_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpurun::test
