// Crash-safe file replacement shared by the model writers (text format, safetensors, embeddings).
#pragma once

#include <string>
#include <string_view>

namespace dynet::io_detail {

// Writes into a temporary file in the target's directory; commit() makes it durable (fsync) and
// renames it over the target, so readers see either the old file or the complete new one. If the
// writer is destroyed without commit() (an exception mid-save), the temporary file is removed and
// the target is untouched. A process killed mid-save cannot remove its temporary: the next writer of
// the same target does (a writer holds a lock on its temporary while it lives).
class AtomicFileWriter {
 public:
  // `who` prefixes error messages (e.g. "TextFileSaver"). Throws std::runtime_error when the
  // temporary file cannot be created (missing or unwritable directory).
  AtomicFileWriter(const std::string& target, std::string who);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  // Appends the current contents of the target, if it exists (append-mode saves).
  void copy_existing_target();
  void commit();

  const std::string& target() const { return target_; }

 private:
  void flush_buffer();
  [[noreturn]] void fail(const std::string& action, int err) const;

  std::string target_, temp_path_, who_;
  int fd_ = -1;
  std::string buffer_;
  bool committed_ = false;
};

}  // namespace dynet::io_detail
