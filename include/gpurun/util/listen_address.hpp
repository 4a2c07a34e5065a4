#pragma once
// Where a TCP listener listens, as written: "HOST:PORT" or "[IPv6]:PORT" (gpurund --listen, and
// the system file's service.listen, checked when the file is read).
#include <optional>
#include <string>

namespace gpurun {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "localhost"
  std::string port;  // "9400"; "0" takes a free one
};

constexpr const char* kListenExample = "such as 127.0.0.1:9400 or [::1]:9400";

// What is wrong with `text` as HOST:PORT ("no host and port"); nullopt where nothing is.
std::optional<std::string> listen_address_problem(const std::string& text);

// Throws Error saying what is wrong and what to type instead.
ListenAddress parse_listen_address(const std::string& text);

}  // namespace gpurun
