#include "gpurun/config/notify_policy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpurun/util/suggest.hpp"

namespace gpurun {
namespace {

constexpr std::array<const char*, 5> kKeys{"webhook", "mail", "mail_domain", "sendmail", "events"};

// http:// or https://, a host (not "https:///path"), nothing blank or a control character.
bool is_url(const std::string& url) {
  const std::size_t host = url.starts_with("https://") ? 8 : url.starts_with("http://") ? 7 : 0;
  return host != 0 && url.size() > host && url[host] != '/' && url[host] != '?' && url[host] != '#' &&
         url[host] != ':' && std::none_of(url.begin(), url.end(), [](char c) { return c <= ' ' || c == '\x7f'; });
}

// A mail domain: labels of letters, digits and dashes between single dots, as DNS names are written.
bool is_domain(const std::string& domain) {
  return !domain.empty() && domain.size() <= 253 && domain.front() != '.' && domain.front() != '-' &&
         domain.back() != '.' && domain.back() != '-' && domain.find("..") == std::string::npos &&
         std::all_of(domain.begin(), domain.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
         });
}

}  // namespace

bool NotifyPolicy::wants(std::string_view event) const {
  return (!webhook.empty() || mail) && std::find(events.begin(), events.end(), event) != events.end();
}

NotifyPolicyRead read_notify_policy(const nlohmann::json& value) {
  NotifyPolicyRead read;
  const auto fail = [&](std::string key, std::string what) {
    read.problem = std::pair{std::move(key), std::move(what)};
    return read;
  };
  if (!value.is_object())
    return fail("", "expected an object, such as {\"webhook\": \"https://chat.example.org/hooks/abc\"}");
  for (const auto& entry : value.items()) {
    const std::string& key = entry.key();  // not a structured binding: clang 14 cannot capture one
    const nlohmann::json& item = entry.value();
    if (key == "webhook") {
      if (!item.is_string() || !is_url(item.get<std::string>()))
        return fail(key, "expected an http:// or https:// URL, such as \"https://chat.example.org/hooks/abc\"");
      read.policy.webhook = item.get<std::string>();
    } else if (key == "mail") {
      if (!item.is_boolean()) return fail(key, "expected true or false");
      read.policy.mail = item.get<bool>();
    } else if (key == "mail_domain") {
      if (!item.is_string() || !is_domain(item.get<std::string>()))
        return fail(key, "expected a domain name, such as \"lab.example.org\"");
      read.policy.mail_domain = item.get<std::string>();
    } else if (key == "sendmail") {
      // A path alone: it is run as it is named (with -t), never split into words by a shell.
      if (!item.is_string() || !item.get<std::string>().starts_with('/') ||
          item.get<std::string>().find_first_of(" \t") != std::string::npos)
        return fail(key,
                    "expected the absolute path of a sendmail program alone, no arguments, such as "
                    "\"/usr/sbin/sendmail\"");
      read.policy.sendmail = item.get<std::string>();
    } else if (key == "events") {
      const auto expected = fmt::format("expected a list of events from {}", fmt::join(kNotifyEvents, ", "));
      if (!item.is_array()) return fail(key, expected);
      read.policy.events.clear();
      for (const nlohmann::json& event : item) {
        if (!event.is_string()) return fail(key, expected);
        const std::string name = event.get<std::string>();
        if (std::find(kNotifyEvents.begin(), kNotifyEvents.end(), name) == kNotifyEvents.end()) {
          const std::vector<std::string> names(kNotifyEvents.begin(), kNotifyEvents.end());
          return fail(key, fmt::format("\"{}\" is not an event; {}{}", name, expected, suggestion(name, names)));
        }
        read.policy.events.push_back(name);
      }
      if (read.policy.events.empty())
        return fail(key, "an empty list notifies nothing; name the events, or leave \"notify\" out");
    } else {
      const std::vector<std::string> names(kKeys.begin(), kKeys.end());
      return fail(key, fmt::format("not a setting of notify{}", suggestion(key, names)));
    }
  }
  if (read.policy.webhook.empty() && !read.policy.mail)
    return fail("", "notify needs a webhook or \"mail\": true (or both)");
  return read;
}

}  // namespace gpurun
