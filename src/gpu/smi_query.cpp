#include "gpu/smi_query.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "util/error.hpp"
#include "gpu/smi_csv.hpp"
#include "util/text.hpp"

namespace gpurun {
namespace {

std::string hint_for(int exit_code) {
  switch (exit_code) {
    case 2: return " This driver does not know a field gpurun asks for; a newer driver, or --from-csv, is needed.";
    case 6: return " No NVIDIA GPU is visible on this machine.";
    case 9: return " Is the NVIDIA driver installed and loaded (lsmod | grep nvidia)?";
    case 18: return " The driver and its library differ in version, usually after a driver upgrade: reboot, or reload the nvidia kernel modules.";
    default: return "";
  }
}

// nvidia-smi's own words: it prints its errors on stdout, some on stderr.
std::string own_words(const ProcessResult& result) {
  std::string words;
  for (const std::string* stream : {&result.out, &result.err}) {
    for (const auto& line : text::non_blank_lines(*stream)) {
      if (words.size() > 800) break;
      words += fmt::format("{}{}", words.empty() ? "" : " ", text::printable(text::trim(line.text), 300));
    }
  }
  return words;
}

void check(const ProcessResult& result, const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  if (result.succeeded()) return;
  const std::string& program = spec.argv.front();
  if (result.end == ProcessResult::End::not_started && result.spawn_errno == ENOENT)
    throw Error(fmt::format("nvidia-smi not found (looked for \"{}\"{}): install the NVIDIA driver utilities, "
                            "or pass --nvidia-smi PATH, or --from-csv FILE to read a recorded snapshot",
                            program, program.find('/') == std::string::npos ? " on PATH" : ""));
  const std::string words = own_words(result);
  throw Error(fmt::format("{} {} {}{}{}", program, spec.argv[1], describe_end(result, timeout),
                          words.empty() ? "" : ": " + words,
                          result.end == ProcessResult::End::exited ? hint_for(result.exit_code) : ""));
}

}  // namespace

ProcessSpec gpu_query(const std::string& nvidia_smi) {
  return {{nvidia_smi, fmt::format("--query-gpu={}", fmt::join(kGpuQueryFields, ",")), "--format=csv,noheader,nounits"}, {}};
}

ProcessSpec compute_apps_query(const std::string& nvidia_smi) {
  return {{nvidia_smi, fmt::format("--query-compute-apps={}", fmt::join(kComputeAppFields, ",")), "--format=csv,noheader,nounits"}, {}};
}

std::vector<Gpu> query_gpus(const std::string& nvidia_smi, std::chrono::milliseconds timeout) {
  const std::vector<ProcessSpec> specs{gpu_query(nvidia_smi), compute_apps_query(nvidia_smi)};
  const std::vector<ProcessResult> results = run_processes(specs, timeout);
  check(results[0], specs[0], timeout);
  check(results[1], specs[1], timeout);
  std::vector<Gpu> gpus = parse_gpu_csv(results[0].out);
  if (gpus.empty()) throw Error("nvidia-smi listed no GPUs");
  attach_processes(gpus, parse_compute_apps_csv(results[1].out));
  return gpus;
}

std::vector<Gpu> read_gpu_snapshot(const std::string& path) {
  std::string content;
  if (path == "-") {
    content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw Error(fmt::format("cannot read --from-csv {}: {}", path, std::strerror(errno)));
    std::ostringstream buffer;
    buffer << file.rdbuf();
    content = buffer.str();
  }
  std::vector<Gpu> gpus;
  try {
    gpus = parse_gpu_csv(content);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path == "-" ? "stdin" : path, e.what()));
  }
  if (gpus.empty()) throw Error(fmt::format("{} lists no GPUs", path == "-" ? "stdin" : path));
  return gpus;
}

}  // namespace gpurun
