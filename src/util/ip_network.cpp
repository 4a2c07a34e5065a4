#include "gpurun/util/ip_network.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// The address `text` names, v4 or v6; an IPv4-mapped IPv6 address as the IPv4 one.
std::optional<IpNetwork> parse_address(const std::string& text) {
  IpNetwork ip;
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    std::memcpy(ip.address.data(), &v4, 4);
    ip.prefix = 32;
    return ip;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    std::memcpy(ip.address.data(), &v6.s6_addr[12], 4);
    ip.prefix = 32;
    return ip;
  }
  ip.v6 = true;
  std::memcpy(ip.address.data(), &v6, 16);
  ip.prefix = 128;
  return ip;
}

}  // namespace

std::optional<IpNetwork> parse_ip_network(std::string_view text) {
  const std::size_t slash = text.find('/');
  std::optional<IpNetwork> network = parse_address(std::string(text.substr(0, slash)));
  if (!network || slash == std::string_view::npos) return network;
  auto bits = text::parse_integer(text.substr(slash + 1));
  // An IPv4-mapped network ("::ffff:10.0.0.0/104") is written in IPv6's bits: the IPv4 one's 96 more.
  if (bits && !network->v6 && text.find(':') != std::string_view::npos) *bits -= 96;
  if (!bits || *bits < 0 || *bits > network->prefix) return std::nullopt;
  network->prefix = static_cast<int>(*bits);
  return network;
}

bool in_network(const IpNetwork& network, std::string_view text) {
  const std::optional<IpNetwork> ip = parse_address(std::string(text));
  if (!ip || ip->v6 != network.v6) return false;
  for (int bit = 0; bit < network.prefix; ++bit) {
    const auto byte = static_cast<std::size_t>(bit / 8);
    const auto mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
    if ((ip->address[byte] & mask) != (network.address[byte] & mask)) return false;
  }
  return true;
}

}  // namespace gpurun
