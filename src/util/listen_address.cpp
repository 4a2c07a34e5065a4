#include "gpurun/util/listen_address.hpp"

#include <fmt/format.h>

#include <charconv>
#include <system_error>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// The address, or what is wrong with it.
std::optional<ListenAddress> read_address(const std::string& text, std::string& why) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    why = "no host and port";
    return std::nullopt;
  }
  ListenAddress address{.host = text.substr(0, colon), .port = text.substr(colon + 1)};
  if (address.host.starts_with('[')) {
    if (!address.host.ends_with(']') || address.host.size() < 3) {
      why = "an IPv6 address goes in brackets";
      return std::nullopt;
    }
    address.host = address.host.substr(1, address.host.size() - 2);
  } else if (address.host.find(':') != std::string::npos) {
    why = "an IPv6 address goes in brackets";
    return std::nullopt;
  }
  int port = -1;
  const auto [end, error] = std::from_chars(address.port.data(), address.port.data() + address.port.size(), port);
  if (address.port.empty() || error != std::errc() || end != address.port.data() + address.port.size() || port < 0 ||
      port > 65535) {
    why = "the port must be a number from 0 to 65535";
    return std::nullopt;
  }
  return address;
}

}  // namespace

std::optional<std::string> listen_address_problem(const std::string& text) {
  std::string why;
  if (read_address(text, why)) return std::nullopt;
  return why;
}

ListenAddress parse_listen_address(const std::string& text) {
  std::string why;
  if (auto address = read_address(text, why)) return std::move(*address);
  throw Error(fmt::format("--listen {}: {}; give HOST:PORT, {}", text::printable(text), why, kListenExample));
}

}  // namespace gpurun
