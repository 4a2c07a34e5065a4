#pragma once
// The notifications a stopping gpurund could not deliver (a webhook waiting for its next try, or
// what the stop's 5 s did not reach), kept in the state directory and sent at the next start under
// the same rules: an idle policy's warning must not be lost to a restart, which takes it as given
// and stops the run when its time comes.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/service/notifier.hpp"

namespace gpurun {

struct SpooledNotification {
  Notification notification;
  bool mailed = false;  // the mail already went (sendmail took it)
  bool posted = false;  // the webhook already took it
};

// Writes `pending` to `path` (replacing it at once, mode 0600); a message where it cannot.
std::optional<std::string> keep_notifications(const std::string& path, const std::vector<SpooledNotification>& pending);

// What `path` holds (none where it does not exist); a notification over a day old is dropped
// (logged), and a file that is not one of keep_notifications' is set aside whole, with a message.
// The file stays until what it held is delivered: a crash before then sends it again.
std::vector<SpooledNotification> read_kept_notifications(const std::string& path, WallTime now);

// Removes `path` (where it exists), saying why what it held is not sent: `why`.
void forget_kept_notifications(const std::string& path, std::string_view why);

// The runs whose launch asked to be told of their end (--notify: a label the engine no longer
// lists once a container is gone): kept beside them, so that a run that ends while gpurund is
// stopped is still told of at the next start. Writes `keys` to `path` (replacing it, mode 0600);
// a message where it cannot.
inline constexpr const char* kAskedFile = "notify-on-end.json";  // in the state directory
std::optional<std::string> keep_run_keys(const std::string& path, const std::set<std::string>& keys);
// The keys `path` holds (none where it does not exist, or it is not a list of them: said).
std::set<std::string> read_run_keys(const std::string& path);

}  // namespace gpurun
