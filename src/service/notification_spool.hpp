#pragma once
// The notifications a stopping gpurund could not deliver (a webhook down, waiting for its next
// try), kept in the state directory and sent at the next start: an idle policy's warning must
// not be lost to a restart, which takes it as given and stops the run when its time comes.
#include <string>
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

// What `path` holds, the file then removed; a notification over a day old is dropped (logged),
// and a file that is not one of keep_notifications' is set aside whole, with a message.
std::vector<SpooledNotification> take_kept_notifications(const std::string& path, WallTime now);

}  // namespace gpurun
