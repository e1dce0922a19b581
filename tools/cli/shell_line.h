#pragma once

// Commands as a person would type them into a POSIX shell.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim {

// `text` as one word of a POSIX shell: as it is when it holds only characters no shell treats
// specially, else in single quotes (a quote inside as '\'').
inline std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._=-/:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// `words` as one shell line: shell_word() of each, joined by spaces.
inline std::string shell_line(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) line += (line.empty() ? "" : " ") + shell_word(word);
  return line;
}

}  // namespace clustersim
