#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace clustersim {

// `message` cut to `max_bytes` (default 1,000: about ten lines), with the count of what was left
// out, so that no error message is longer than a few lines whatever value it quotes.
inline std::string bounded_message(const std::string& message, std::size_t max_bytes = 1000) {
  if (message.size() <= max_bytes) return message;
  return message.substr(0, max_bytes) + "... (" + std::to_string(message.size() - max_bytes) + " more characters)";
}

// Longest InputError message, in bytes (about twenty lines; the CLI prints at most 1,000). A value quoted in a message is cut where
// it is quoted (core/excerpt.h); this bound is the backstop for one that was not: the message is
// cut here, keeping its start (the file, line and key), and `cut()` says so. The fuzz harnesses
// (tests/fuzz/) treat a cut message as a finding: a loader quoted a value it should have cut.
inline constexpr std::size_t kMaxInputErrorBytes = 2000;

// Where a bad value came from, as fields, for programs (the Python module's InputError.file, .line,
// .column, .key); the message says the same in words. `file` is the file that holds the value, or
// empty when the value came from a --set override; `line` and `column` are 1-based, 0 when unknown
// (an error about a whole file, or about a --set value); `key` is the dotted path of the key
// ("training.seq_len", "stragglers[2].gpu"), empty when the error is about the file itself (a YAML
// syntax error, an unreadable file).
struct InputLocation {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key;
};

// Bad input from the user: a malformed value, an unknown preset, an invalid layout.
// The CLI maps it to exit code 2. The message names the offending value and what would be valid;
// where the value came from a file, the loader prefixes "file:line:column: key: ". An error raised
// by the scenario loader about one key or file also carries that place as fields (location());
// errors about a combination of values, or rewritten by a caller, carry none.
//
// A check that knows which scenario keys its values come from says so with about(): the dotted
// keys ("model.kv_heads", "model.heads"), most to blame first. The scenario loader places the
// error at the first of them that its file gives (ConfigDocument::located), without reading the
// message. keys() is empty for errors about no key (a file, a flag, a value built in code).
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message)
      : std::runtime_error(bounded_message(message, kMaxInputErrorBytes)), cut_(message.size() > kMaxInputErrorBytes) {}
  InputError(const std::string& message, InputLocation location) : InputError(message) {
    location_ = std::move(location);
  }
  // This error, about `keys` (dotted scenario keys, most to blame first).
  InputError about(std::vector<std::string> keys) const {
    InputError e = *this;
    e.keys_ = std::move(keys);
    return e;
  }
  // Whether the message was longer than kMaxInputErrorBytes and was cut.
  bool cut() const { return cut_; }
  // The file, line, column and key of the bad value, where the code that found it knew them.
  const std::optional<InputLocation>& location() const { return location_; }
  // The scenario keys the error is about (about()), most to blame first; empty when none is known.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  bool cut_;
  std::optional<InputLocation> location_;
  std::vector<std::string> keys_;
};

// An arithmetic result that does not fit the type holding it (int64 picoseconds or bytes).
// It is bad input when it comes from user values, so it is an InputError.
class OverflowError : public InputError {
 public:
  explicit OverflowError(const std::string& message) : InputError(message) {}
};

// A broken invariant inside clustersim (a bug). The CLI maps it to exit code 1.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

// Flushes `out` and throws InputError naming `what` (a file or "standard output") when a write to
// it failed: a full disk, /dev/full, a closed pipe. Output that did not arrive is not a success.
inline void check_written(std::ostream& out, const std::string& what) {
  out.flush();
  if (!out) throw InputError(what + ": writing failed (the device is full or not writable)");
}

// Throws InternalError with `message` when `condition` is false. For invariants, not user input.
inline void check_invariant(bool condition, const char* message) {
  if (!condition) throw InternalError(message);
}

}  // namespace clustersim
