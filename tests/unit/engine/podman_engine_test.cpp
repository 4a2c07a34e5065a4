// Unit tests for where podman's Docker-compatible API socket is, rootful and rootless.
#include "podman/podman_engine.hpp"

#include <gtest/gtest.h>

namespace gpurun {
namespace {

TEST(PodmanSocketPath, RootfulPodmansSocketForRoot) {
  EXPECT_EQ(podman_socket_path({0, std::nullopt, "/run/user/0"}), "/run/podman/podman.sock");
}

TEST(PodmanSocketPath, RootlessPodmansSocketUnderTheUsersRuntimeDir) {
  EXPECT_EQ(podman_socket_path({1000, std::nullopt, "/run/user/1000"}), "/run/user/1000/podman/podman.sock");
  EXPECT_EQ(podman_socket_path({1000, std::nullopt, std::nullopt}), std::nullopt);
}

TEST(PodmanSocketPath, ContainerHostComesFirstWhereItIsAUnixSocket) {
  EXPECT_EQ(podman_socket_path({1000, "unix:///tmp/p.sock", "/run/user/1000"}), "/tmp/p.sock");
  EXPECT_EQ(podman_socket_path({0, "ssh://core@host/run/podman/podman.sock", std::nullopt}), std::nullopt);
}

}  // namespace
}  // namespace gpurun
