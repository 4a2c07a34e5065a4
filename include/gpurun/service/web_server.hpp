#pragma once
// gpurund's TCP listener (`--listen ADDR:PORT`, setting service.listen; off unless set): GET
// /metrics for Prometheus (gpurun/service/metrics.hpp), and the lab's page with its JSON API
// (src/service/web_routes.hpp). It only reads the last sample and the store, under the recorder's
// lock, and runs in a thread of its own until destroyed. Anyone who can reach the
// address can read it: keep it on loopback or behind the site's proxy (README, "Metrics").
#include <atomic>
#include <string>
#include <thread>

#include "gpurun/service/service_server.hpp"
#include "gpurun/util/listen_address.hpp"

namespace gpurun {

class WebServer {
 public:
  // Throws Error when it cannot listen there.
  // `settings`: who may see which runs (the socket's, applied to the page's API).
  WebServer(const std::string& listen, ServedRuns& runs, ServerSettings settings);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  int port() const { return port_; }  // the one bound (the one given, or a free one for 0)

 private:
  ServedRuns& runs_;
  ServerSettings settings_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace gpurun
