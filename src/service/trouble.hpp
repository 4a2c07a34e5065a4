#pragma once
// A failure that repeats at every sample or write (the GPU source, the engine, the store), logged
// once while it repeats and once more when it is over.
#include <spdlog/spdlog.h>

#include <string>
#include <utility>

namespace gpurun {

class Trouble {
 public:
  explicit Trouble(std::string what, std::string again = "at each sample")
      : what_(std::move(what)), again_(std::move(again)) {}
  void failed(const std::string& why) {
    if (why != last_) spdlog::error("{}: {} (trying again {})", what_, why, again_);
    last_ = why;
  }
  void fine() {
    if (!last_.empty()) spdlog::info("{}: working again", what_);
    last_.clear();
  }

 private:
  std::string what_;
  std::string again_;
  std::string last_;
};

}  // namespace gpurun
