#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace dynet::io_detail {

namespace {
constexpr size_t kBufferBytes = 1 << 20;

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Replacing a symlink's target keeps the link (rename would replace the link itself).
std::string resolve_symlink(const std::string& target) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(target, ec)) return target;
  auto resolved = std::filesystem::canonical(target, ec);
  return ec ? target : resolved.string();
}

// Temporaries are named ".<target's name>.dynet-unfinished-save-<pid>-<n>-<random>" so that a user who
// finds one knows what it is, and so that the next save of the same target can find it.
std::string temp_prefix(const std::string& target) { return "." + basename_of(target) + ".dynet-unfinished-save-"; }

// A writer holds flock() on its temporary from creation to rename, and the kernel drops the lock when
// the process dies, so a temporary nobody holds locked belongs to a save that was killed: remove it.
// Locks are per open file, so a save in progress in this very process is recognised as well.
void remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
      ::unlink(it->path().c_str());
    ::close(fd);
  }
}

void write_all(int fd, const char* data, size_t n, int* err) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  *err = 0;
}
}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::string& target, std::string who)
    : target_(resolve_symlink(target)), who_(std::move(who)) {
  if (target.empty()) throw std::invalid_argument(who_ + ": empty file name");
  const std::string dir = directory_of(target_);
  const std::string prefix = temp_prefix(target_);
  remove_stale_temporaries(dir, prefix);
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_path_ = dir + "/" + prefix + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                 std::to_string(rd() % 1000000);
    // 0666 lets the umask decide the permissions, as for a file opened the ordinary way.
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) fail("could not create a temporary file in " + dir, errno);
    if (fd_ < 0) continue;
    // Another save's cleanup may have removed the file between its creation and the lock: start
    // again. Where flock is unsupported nothing can lock, so cleanups remove nothing either.
    struct stat st;
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  if (fd_ < 0) fail("could not create a temporary file in " + dir, EEXIST);
  struct stat st;
  if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::fchmod(fd_, st.st_mode & 07777);
  buffer_.reserve(kBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) ::unlink(temp_path_.c_str());
  if (fd_ >= 0) ::close(fd_);
}

void AtomicFileWriter::fail(const std::string& action, int err) const {
  throw std::runtime_error(who_ + ": " + action + " while saving " + target_ + ": " + std::strerror(err));
}

void AtomicFileWriter::flush_buffer() {
  int err;
  write_all(fd_, buffer_.data(), buffer_.size(), &err);
  buffer_.clear();
  if (err) fail("could not write", err);
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > kBufferBytes) flush_buffer();
  if (bytes.size() >= kBufferBytes) {
    int err;
    write_all(fd_, bytes.data(), bytes.size(), &err);
    if (err) fail("could not write", err);
    return;
  }
  buffer_.append(bytes);
}

void AtomicFileWriter::copy_existing_target() {
  const int in = ::open(target_.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    if (errno == ENOENT) return;
    fail("could not read the existing file to append to it", errno);
  }
  flush_buffer();
  std::string chunk(kBufferBytes, '\0');
  for (;;) {
    const ssize_t r = ::read(in, chunk.data(), chunk.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(in);
      fail("could not read the existing file to append to it", err);
    }
    if (r == 0) break;
    int err;
    write_all(fd_, chunk.data(), static_cast<size_t>(r), &err);
    if (err) {
      ::close(in);
      fail("could not write", err);
    }
  }
  ::close(in);
}

void AtomicFileWriter::commit() {
  if (committed_) throw std::logic_error(who_ + ": AtomicFileWriter committed twice");
  flush_buffer();
  if (::fsync(fd_) != 0) fail("could not flush to disk", errno);
  // Renamed before it is closed, so the lock that marks it as in use is held until it has its final
  // name. The data is already on disk, so a failing close cannot lose it.
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) fail("could not replace the file", errno);
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
  // Make the rename itself durable; some file systems refuse fsync on directories, which is harmless.
  const int dir = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace dynet::io_detail
