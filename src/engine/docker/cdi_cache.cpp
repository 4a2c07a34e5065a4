#include "docker/cdi_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gpurun/util/fd.hpp"
#include "gpurun/util/privileges.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;
constexpr std::size_t kMaxCacheBytes = std::size_t{64} * 1024;  // a few sockets' answers; anything larger is not ours

// Owned by this user and writable by nobody else.
bool trusted(const struct stat& st) { return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0; }

bool trusted_directory(const std::string& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && trusted(st);
}

// The cache's JSON, {"SOCKET": {"mark": ..., "cdi": ..., "why": ...}}; an empty object when absent or untrusted.
json read_cache(const std::string& file) {
  if (!trusted_directory(std::filesystem::path(file).parent_path().string())) return json::object();
  const Fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !trusted(st) ||
      static_cast<std::size_t>(st.st_size) > kMaxCacheBytes)
    return json::object();
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (::read(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return json::object();
  json cache = json::parse(text, nullptr, false);
  return cache.is_object() ? cache : json::object();
}

}  // namespace

std::string default_cdi_cache_file() {
  // Under sudo root's engine is asked, as root: its answer is root's to keep (docker_api.cpp
  // reads and writes the file raised), not the caller's, whose HOME sudo has made /root's.
  if (::geteuid() == 0 || acting_for_caller()) return "/var/cache/gpurun/engine-cdi.json";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/gpurun/engine-cdi.json";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return std::string(home) + "/.cache/gpurun/engine-cdi.json";
  return "";
}

std::optional<std::string> socket_mark(const std::string& socket_path) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0) return std::nullopt;
  return fmt::format("{}:{}:{}.{:09}", st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

std::optional<CdiSupport> cached_cdi(const std::string& cache_file, const std::string& socket_path,
                                     const std::string& mark) {
  const json cache = read_cache(cache_file);
  const auto entry = cache.find(socket_path);
  if (entry == cache.end() || !entry->is_object()) return std::nullopt;
  // find, never value(): a "mark" of another type (a file edited by hand) is a miss, not a throw.
  const auto recorded = entry->find("mark");
  if (recorded == entry->end() || !recorded->is_string() || recorded->get<std::string>() != mark) return std::nullopt;
  const auto cdi = entry->find("cdi");
  const auto why = entry->find("why");
  if (cdi == entry->end() || !cdi->is_boolean() || why == entry->end() || !why->is_string()) return std::nullopt;
  return CdiSupport{cdi->get<bool>(), why->get<std::string>()};
}

void remember_cdi(const std::string& cache_file, const std::string& socket_path, const std::string& mark,
                  const CdiSupport& answer) {
  if (cache_file.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(cache_file).parent_path();
  std::error_code ignored;
  std::filesystem::create_directories(dir.parent_path(), ignored);
  ::mkdir(dir.c_str(), 0700);  // private, whatever the umask; one that exists is checked below
  if (!trusted_directory(dir.string())) return;
  json cache = read_cache(cache_file);
  if (cache.size() > 16) cache = json::object();  // sockets of engines long gone
  cache[socket_path] = {{"mark", mark}, {"cdi", answer.available}, {"why", answer.why}};
  const std::string text = cache.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string temporary = fmt::format("{}.{}", cache_file, ::getpid());
  const Fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return;
  const bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!written || ::rename(temporary.c_str(), cache_file.c_str()) != 0) ::unlink(temporary.c_str());
}

}  // namespace gpurun
