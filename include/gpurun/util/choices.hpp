#pragma once
// The settings whose value is one of a few words, typed once: each is an enum, and Choices<E>
// lists its words (in the order messages and completion show them). The settings registry
// (gpurun/config/settings.hpp) reads a word into the enum and offers the words to completion;
// no other code compares them as strings.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

enum class Backend { local, slurm };                             // backend: where the job runs
enum class EngineSetting { automatic, docker, podman };          // engine: which container engine
enum class GpuSourceSetting { automatic, nvml, nvidia_smi };     // gpu_source: where GPU data comes from
enum class GpuRequestSetting { automatic, gpus, cdi, runtime };  // gpu_request: how a container asks for GPUs
enum class SlurmContainer { none, pyxis, oci };                  // slurm_container: how a Slurm step runs the image
enum class UsageKey { user, image, gpu };                        // usage --by: what the sums are per
enum class HistoryVisibility { all, own };                       // history_visibility: whose runs a caller sees
enum class IdleScope { gpurun, all };                            // idle_policy.scope: which containers it stops

// Choices<E>::words[i] is the word of Choices<E>::values[i].
template <typename E>
struct Choices;

template <>
struct Choices<Backend> {
  static constexpr std::array<std::string_view, 2> words{"local", "slurm"};
  static constexpr std::array values{Backend::local, Backend::slurm};
};
template <>
struct Choices<EngineSetting> {
  static constexpr std::array<std::string_view, 3> words{"auto", "docker", "podman"};
  static constexpr std::array values{EngineSetting::automatic, EngineSetting::docker, EngineSetting::podman};
};
template <>
struct Choices<GpuSourceSetting> {
  static constexpr std::array<std::string_view, 3> words{"auto", "nvml", "nvidia-smi"};
  static constexpr std::array values{GpuSourceSetting::automatic, GpuSourceSetting::nvml, GpuSourceSetting::nvidia_smi};
};
template <>
struct Choices<GpuRequestSetting> {
  static constexpr std::array<std::string_view, 4> words{"auto", "gpus", "cdi", "runtime"};
  static constexpr std::array values{GpuRequestSetting::automatic, GpuRequestSetting::gpus, GpuRequestSetting::cdi,
                                     GpuRequestSetting::runtime};
};
template <>
struct Choices<SlurmContainer> {
  static constexpr std::array<std::string_view, 3> words{"pyxis", "oci", "none"};
  static constexpr std::array values{SlurmContainer::pyxis, SlurmContainer::oci, SlurmContainer::none};
};

template <>
struct Choices<UsageKey> {
  static constexpr std::array<std::string_view, 3> words{"user", "image", "gpu"};
  static constexpr std::array values{UsageKey::user, UsageKey::image, UsageKey::gpu};
};
template <>
struct Choices<HistoryVisibility> {
  static constexpr std::array<std::string_view, 2> words{"all", "own"};
  static constexpr std::array values{HistoryVisibility::all, HistoryVisibility::own};
};

template <>
struct Choices<IdleScope> {
  static constexpr std::array<std::string_view, 2> words{"gpurun", "all"};
  static constexpr std::array values{IdleScope::gpurun, IdleScope::all};
};

// The word of `value` ("nvidia-smi" for GpuSourceSetting::nvidia_smi).
template <typename E>
constexpr std::string_view word_of(E value) {
  for (std::size_t i = 0; i < Choices<E>::values.size(); ++i)
    if (Choices<E>::values[i] == value) return Choices<E>::words[i];
  return {};
}

// The value `word` names; nullopt for any other word.
template <typename E>
constexpr std::optional<E> choice_from(std::string_view word) {
  for (std::size_t i = 0; i < Choices<E>::words.size(); ++i)
    if (Choices<E>::words[i] == word) return Choices<E>::values[i];
  return std::nullopt;
}

}  // namespace gpurun
