#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clustersim {

// `text` cut to at most `max_bytes` bytes (on a UTF-8 character boundary) with "..." after a cut:
// for quoting a value in a message, whatever its length (an input can quote a whole file).
inline std::string excerpt(std::string_view text, std::size_t max_bytes = 60) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace clustersim
