#include "support/fake_sysfs.hpp"

#include <fmt/format.h>

#include "gpurun/gpu/topology.hpp"
#include "support/test_support.hpp"

namespace gpurun::test {

FakeHost dgx_a100() {
  FakeHost host;
  const std::vector<std::pair<std::string, int>> gpus{{"07", 3}, {"0F", 3}, {"47", 1}, {"4E", 1},
                                                      {"87", 7}, {"90", 7}, {"B7", 5}, {"BD", 5}};
  for (const auto& [bus, node] : gpus) host.gpus.push_back({fmt::format("00000000:{}:00.0", bus), node});
  for (int node = 0; node < 8; ++node) {
    host.nodes[node] = fmt::format("{}-{},{}-{}", node * 16, node * 16 + 15, 128 + node * 16, 128 + node * 16 + 15);
    host.sockets[node] = node / 4;
  }
  return host;
}

FakeHost dgx_h100() {
  FakeHost host;
  int index = 0;
  for (const char* bus : {"1B", "43", "52", "61", "9D", "C3", "D1", "DF"})
    host.gpus.push_back({fmt::format("00000000:{}:00.0", bus), index++ < 4 ? 0 : 1});
  host.nodes = {{0, "0-55,112-167"}, {1, "56-111,168-223"}};
  host.sockets = {{0, 0}, {1, 1}};
  return host;
}

FakeHost pcie_2socket() {
  FakeHost host;
  host.gpus = {{"00000000:81:00.0", 1},
               {"00000000:01:00.0", 0},
               {"00000000:02:00.0", 0},
               {"00000000:41:00.0", 0},
               {"00000000:42:00.0", 0}};
  host.nodes = {{0, "0-7,16-23"}, {1, "8-15,24-31"}};
  host.sockets = {{0, 0}, {1, 1}};
  return host;
}

FakeHost workstation_nv4() {
  FakeHost host;
  host.gpus = {{"00000000:21:00.0", -1}, {"00000000:22:00.0", -1}, {"00000000:41:00.0", -1}, {"00000000:43:00.0", -1}};
  host.nodes = {{0, "0-31"}};
  host.sockets = {{0, 0}};
  return host;
}

std::string write_fake_sysfs(const std::filesystem::path& root, const FakeHost& host) {
  const auto sys = root / "sys";
  for (const auto& gpu : host.gpus) {
    const auto device = sys / "bus/pci/devices" / sysfs_pci_bus_id(gpu.bus_id);
    write_file(device / "numa_node", fmt::format("{}\n", gpu.node));
    // A node-less device lists every CPU as local, as the kernel does.
    std::string cpus;
    if (gpu.node >= 0) {
      cpus = host.nodes.at(gpu.node);
    } else {
      for (const auto& [node, list] : host.nodes) cpus += (cpus.empty() ? "" : ",") + list;
    }
    write_file(device / "local_cpulist", cpus + "\n");
  }
  for (const auto& [node, list] : host.nodes) {
    write_file(sys / fmt::format("devices/system/node/node{}/cpulist", node), list + "\n");
    const std::set<int> cpus = parse_cpulist(list).value();  // kept: a range-for over *temporary dangles
    for (int cpu : cpus)
      write_file(sys / fmt::format("devices/system/cpu/cpu{}/topology/physical_package_id", cpu),
                 fmt::format("{}\n", host.sockets.at(node)));
  }
  return root.string();
}

}  // namespace gpurun::test
