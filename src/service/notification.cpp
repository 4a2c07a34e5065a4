#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>

#include "gpurun/history/time_text.hpp"
#include "gpurun/service/notifier.hpp"

namespace gpurun {
namespace {

// A login mail can be sent to: what useradd accepts by default, no more (the name ends up in a
// header that sendmail -t reads recipients from).
bool mailable(const std::string& user) {
  return !user.empty() && user.size() <= 32 && user.front() != '-' && user.front() != '.' &&
         std::all_of(user.begin(), user.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '.';
         });
}

// One header line's value: control characters (a line break above all) become spaces.
std::string header_value(std::string_view text) {
  std::string value(text);
  std::replace_if(
      value.begin(), value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '\x7f'; }, ' ');
  return value;
}

// Slack's and Mattermost's message text: &, < and > escaped as Slack asks, so a name a user chose
// cannot become a mention (<!channel>) or a link; and for Mattermost's Markdown, a zero-width
// space after each '@' and between "](" so that it cannot become @channel, a link or an image,
// and in each "://" so that a URL in a command line is not made a link either; and after a dot
// between a word and a letter, so that a name such as www.example.com is not made one.
std::string chat_text(std::string_view text) {
  constexpr std::string_view kZeroWidthSpace = "\u200b";
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
    // A letter of any script: bytes of UTF-8 beyond ASCII count (пример.рф is a domain too).
    const auto letter = [&](std::size_t at) {
      const auto byte = static_cast<unsigned char>(text[at]);
      return std::isalpha(byte) != 0 || byte >= 0x80;
    };
    const bool domain_dot = c == '.' && i > 0 && i + 1 < text.size() &&
                            (letter(i - 1) || std::isdigit(static_cast<unsigned char>(text[i - 1])) != 0) &&
                            letter(i + 1);
    if (c == '@' || (c == ']' && text.substr(i + 1, 1) == "(") || (c == ':' && text.substr(i + 1, 2) == "//") ||
        domain_dot)
      out += kZeroWidthSpace;
  }
  return out;
}

}  // namespace

nlohmann::ordered_json webhook_body(const Notification& notification) {
  return {{"event", notification.event},
          {"time", rfc3339(notification.time)},
          {"host", notification.host},
          {"text", chat_text(notification.text)},
          {"run", notification.run}};
}

namespace {

// The same for every attempt at one notification, across restarts (it is kept with its time and
// run): a sendmail killed at its time limit after its relay took the mail is tried again, and the
// reader's mail system takes the second copy for the first.
std::string message_id(const Notification& notification) {
  const auto atom = [](std::string_view text) {
    std::string out;
    for (const char c : text) out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ? c : '_';
    return out.empty() ? std::string("_") : out;
  };
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a of what it says, to tell two of one moment apart
  for (const char c : notification.text + notification.user)
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  const auto id = notification.run.contains("id") && notification.run["id"].is_number_integer()
                      ? notification.run["id"].get<std::int64_t>()
                      : std::int64_t{0};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(notification.time.time_since_epoch()).count();
  return fmt::format("<gpurund.{}.{}.{}.{:016x}@{}>", atom(notification.event), id, ms, hash, atom(notification.host));
}

}  // namespace

std::optional<std::string> mail_message(const Notification& notification, const std::string& mail_domain) {
  if (!mailable(notification.user)) return std::nullopt;
  const std::string to = mail_domain.empty() ? notification.user : notification.user + "@" + mail_domain;
  // The run as JSON, ASCII only (a name's other bytes escaped): the body has no charset to mind.
  const std::string run = notification.run.dump(2, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  return fmt::format(
      "To: {}\n"
      "Subject: [gpurun] {}\n"
      "Message-ID: {}\n"
      "Auto-Submitted: auto-generated\n"
      "Content-Type: text/plain; charset=us-ascii\n"
      "\n"
      "{}\n"
      "\n"
      "This was sent by the gpurun service on {} ({} event, {}). The run:\n"
      "{}\n",
      to, header_value(notification.text), message_id(notification), header_value(notification.text),
      header_value(notification.host), notification.event, rfc3339(notification.time), run);
}

}  // namespace gpurun
