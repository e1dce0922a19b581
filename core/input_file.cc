#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {
namespace {

const char* kind_of_file(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes a file descriptor when it goes out of scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  const InputLocation at{.file = path};
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) {
    throw InputError(fmt::format("{}: cannot open the {} ({})", excerpt(path, 200), what, std::strerror(errno)), at);
  }
  if (!S_ISREG(before.st_mode)) {
    throw InputError(fmt::format("{}: is {}, not a regular file; give the path of a {}", excerpt(path, 200),
                                 kind_of_file(before.st_mode), what),
                     at);
  }
  const auto too_large = [&](std::size_t size) {
    return InputError(
        fmt::format("{}: the {} is {} bytes, above the limit of {} bytes ({} MiB); a {} is a few KB to MB",
                    excerpt(path, 200), what, size, max_bytes, max_bytes >> 20, what),
        at);
  };
  if (static_cast<std::size_t>(before.st_size) > max_bytes) throw too_large(static_cast<std::size_t>(before.st_size));
  // O_NONBLOCK: should the path have been swapped for a named pipe since the stat, opening it
  // returns at once instead of waiting for a writer; fstat below then refuses it.
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    throw InputError(fmt::format("{}: cannot open the {} ({})", excerpt(path, 200), what, std::strerror(errno)), at);
  }
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0 || !S_ISREG(opened.st_mode)) {
    throw InputError(fmt::format("{}: is {}, not a regular file; give the path of a {}", excerpt(path, 200),
                                 kind_of_file(opened.st_mode), what),
                     at);
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(opened.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: reading the {} failed ({})", excerpt(path, 200), what, std::strerror(errno)),
                       at);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) throw too_large(text.size());
  }
  return text;
}

}  // namespace clustersim
