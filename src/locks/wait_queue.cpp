#include "gpurun/locks/wait_queue.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// A ticket nobody holds a lock on belongs to a waiter that is gone. One this user may not open (a
// ticket an older gpurun made under sudo's umask) cannot be told: it is taken as live, never
// removed under its waiter; anything else that cannot be opened (a link) is no waiter's.
bool is_live(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return errno == EACCES;
  return ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

}  // namespace

WaitTicket::WaitTicket(const std::string& lock_dir) : lock_dir_(lock_dir) {
  const AsRoot root;  // under sudo the queue lives in the root-owned lock directory
  // The order of arrival on the clock every process shares and nobody sets back (NTP, an admin's
  // date): a waiter that came later never sorts ahead. (An older gpurun's waiter, named by the
  // wall clock, sorts after every one of these while both run, an upgrade's moment: counting it
  // ahead as well would have each wait for the other.)
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  name_ = fmt::format("{}{:011}{:09}-{}", kTicketPrefix, now.tv_sec, now.tv_nsec, ::getpid());
  // Locked under a private name, then renamed: nobody can see it unlocked and sweep it.
  const std::string draft = fmt::format("{}/draft-{}", lock_dir_, name_);
  Fd fd(::open(draft.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) throw Error(fmt::format("cannot join the wait queue in {}: {}", lock_dir_, std::strerror(errno)));
  // Readable by every waiter whatever the umask (sudo's 077): whoever cannot open a ticket cannot
  // tell that it is live.
  (void)::fchmod(fd.get(), 0644);
  lock_ = FileLock(std::move(fd));
  if (::flock(lock_.fd(), LOCK_EX) != 0 || ::rename(draft.c_str(), (lock_dir_ + "/" + name_).c_str()) != 0) {
    const int error = errno;
    ::unlink(draft.c_str());
    throw Error(fmt::format("cannot join the wait queue in {}: {}", lock_dir_, std::strerror(error)));
  }
}

WaitTicket::~WaitTicket() {
  const AsRoot root;
  ::unlink((lock_dir_ + "/" + name_).c_str());
}

int WaitTicket::position() const {
  const AsRoot root;
  int ahead = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(lock_dir_, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kTicketPrefix) || name >= name_) continue;
    if (is_live(entry.path().string())) {
      ++ahead;
    } else {
      ::unlink(entry.path().c_str());  // a waiter that died; fails harmlessly for other users' files
    }
  }
  return ahead;
}

}  // namespace gpurun
