#include "service_client.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/unix_http.hpp"

namespace gpurun {
namespace {

Error not_running(const std::string& why) {
  return Error(
      fmt::format("the gpurun service is not running ({}): history, usage and report answer from it; "
                  "start it with `sudo systemctl enable --now gpurund`, or run `sudo gpurund` in a shell",
                  why));
}

// A socket (or its directory) whose mode keeps this user out: the service runs, the admin decides.
std::string socket_access_hint(std::string_view error) {
  return error.find("ermission denied") == std::string_view::npos
             ? ""
             : " (your user may not open the socket or its directory: gpurund makes it 0666 in a 0755 "
               "directory; ask the admin, who changed that)";
}

// The body of a 200 answer to GET `target`; anything else an Error with the service's message.
std::string answer_body(const Options& options, const std::string& target) {
  const std::string& path = options.service_socket;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw not_running(fmt::format("nothing at {}", path));
    throw Error(fmt::format("cannot look at the gpurun service's socket {}: {}{}", path, std::strerror(errno),
                            socket_access_hint(std::strerror(errno))));
  }
  if (!S_ISSOCK(st.st_mode)) throw not_running(fmt::format("{} is not a socket", path));
  HttpPeer peer{
      .name = "the gpurun service", .access_hint = socket_access_hint, .headers = {}, .note_header = "X-Gpurun-Note"};
  if (options.caller) peer.headers.emplace_back("X-Gpurun-Caller", options.caller->login);
  UnixHttpClient client(path, std::chrono::steady_clock::now() + options.smi_timeout, peer);
  HttpResponse response;
  try {
    response = client.get(target);
  } catch (const Error& e) {
    // A socket left behind by a service that is gone refuses the connection (one this user may not
    // open says so, with the access hint above).
    if (std::string_view(e.what()).find("cannot be reached: Connection refused") != std::string_view::npos)
      throw not_running(fmt::format("{} refuses connections", path));
    throw;
  }
  if (response.status != 200) {
    const auto body = nlohmann::json::parse(response.body, nullptr, false);
    const std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                                    ? body["message"].get<std::string>()
                                    : text::printable(response.body, 200);
    throw Error(fmt::format("the gpurun service answered {}: {}", response.status, text::printable(message, 300)));
  }
  if (!response.note.empty()) spdlog::warn("{}", text::printable(response.note, 300));  // an answer cut to fit
  return std::move(response.body);
}

template <typename Json>
Json parsed(const std::string& body) {
  Json json = Json::parse(body, nullptr, false);
  if (json.is_discarded()) throw Error("the gpurun service answered with something that is not JSON");
  return json;
}

}  // namespace

nlohmann::ordered_json ask_service(const Options& options, const std::string& target) {
  return parsed<nlohmann::ordered_json>(answer_body(options, target));
}

nlohmann::json ask_service_plain(const Options& options, const std::string& target) {
  return parsed<nlohmann::json>(answer_body(options, target));
}

std::optional<std::map<int, long long>> service_idle_gpus(const Options& options) {
  struct stat st {};
  if (::stat(options.service_socket.c_str(), &st) != 0) return std::nullopt;  // no service here: nothing to say
  try {
    const nlohmann::ordered_json answer = ask_service(options, "/v1/gpus");
    std::map<int, long long> idle;
    for (const auto& gpu : answer.at("gpus")) idle[gpu.at("index").get<int>()] = gpu.at("idle_s").get<long long>();
    return idle;
  } catch (const std::exception& e) {  // Error, or an answer of another shape (json's exceptions)
    spdlog::info("idle times not shown: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace gpurun
