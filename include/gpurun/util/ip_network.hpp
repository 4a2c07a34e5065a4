#pragma once
// An IP network as an admin writes one ("10.0.0.5", "10.0.0.0/24", "2001:db8::/64"), and whether
// an address is in it: gpurund's trusted peers (a Prometheus or proxy on another host).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

struct IpNetwork {
  bool v6 = false;
  std::array<std::uint8_t, 16> address{};  // the first 4 bytes for IPv4
  int prefix = 0;                          // bits that must match
};

// The network `text` names; an address alone is its own (/32, /128); nullopt for anything else.
std::optional<IpNetwork> parse_ip_network(std::string_view text);

// Whether the address `text` (as inet_ntop writes it; an IPv4-mapped IPv6 one as its IPv4) lies in
// `network`; false for text that is no address.
bool in_network(const IpNetwork& network, std::string_view text);

}  // namespace gpurun
