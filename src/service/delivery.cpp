// The two ways a notification leaves the machine: libcurl for the webhook (http and https, with
// its own timeouts), `sendmail -t` for mail.
#include <curl/curl.h>
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <mutex>

#include "gpurun/service/notifier.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct HeadersDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// The answer's body is not wanted; reading it lets the connection end cleanly.
std::size_t discard(char* /*data*/, std::size_t size, std::size_t count, void* /*user*/) { return size * count; }

// libcurl's progress callback: non-zero ends the transfer (CURLE_ABORTED_BY_CALLBACK).
int ask_given_up(void* given_up, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/,
                 curl_off_t /*ulnow*/) {
  return (*static_cast<const std::function<bool()>*>(given_up))() ? 1 : 0;
}

}  // namespace

Delivery post_webhook(const std::string& url, const std::string& body, std::chrono::seconds timeout,
                      const std::function<bool()>& given_up) {
  static std::once_flag initialised;
  std::call_once(initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  const std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return {.delivered = false, .retry = true, .error = "libcurl could not start"};
  std::unique_ptr<curl_slist, HeadersDeleter> headers(curl_slist_append(nullptr, "Content-Type: application/json"));
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");  // never file:// or anything else
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // another thread samples; no SIGALRM for DNS timeouts
#if LIBCURL_VERSION_NUM >= 0x075700
  // A timed-out or cut POST returns without waiting for its name lookup's thread (a nameserver
  // that does not answer holds getaddrinfo for 10 s or more): a stopping gpurund is not held by it.
  curl_easy_setopt(c, CURLOPT_QUICK_EXIT, 1L);
#endif
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "gpurund");
  if (given_up) {
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, ask_given_up);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &given_up);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_ABORTED_BY_CALLBACK)
    return {.delivered = false, .retry = true, .error = "given up: gpurund is stopping"};
  if (rc != CURLE_OK)
    return {.delivered = false, .retry = true, .error = error[0] != '\0' ? error : curl_easy_strerror(rc)};
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return {.delivered = true, .retry = false, .error = ""};
  return {.delivered = false,
          .retry = status >= 500 || status == 429 || status == 408,
          .error = fmt::format("the webhook answered HTTP {}", status)};
}

Delivery send_mail(const std::string& sendmail, const std::string& message, std::chrono::seconds timeout) {
  const ProcessResult result = run_process({.argv = {sendmail, "-t"}, .extra_env = {}, .input = message}, timeout);
  if (result.succeeded()) return {.delivered = true, .retry = false, .error = ""};
  // A sendmail that queues (postfix, exim, nullmailer) fails only for its setup; one that hands the
  // mail to a relay there and then (msmtp-mta, ssmtp) fails for a relay down or slow: EX_TEMPFAIL
  // (75), or no end within the limit. Those are tried again, as the webhook is.
  constexpr int kTemporaryFailure = 75;  // sysexits.h EX_TEMPFAIL
  const bool temporary = result.end == ProcessResult::End::timed_out ||
                         (result.end == ProcessResult::End::exited && result.exit_code == kTemporaryFailure);
  return {.delivered = false,
          .retry = temporary,
          .error = fmt::format("{} -t {} {}", sendmail, describe_end(result, timeout), text::printable(result.err))};
}

}  // namespace gpurun
