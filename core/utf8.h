#pragma once

#include <cstddef>
#include <string_view>

namespace clustersim {

// Offset of the first byte of `text` that does not start or continue a well-formed UTF-8 sequence
// (RFC 3629 §4: no overlong forms, no surrogates U+D800..DFFF, nothing above U+10FFFF), or
// std::string_view::npos when all of `text` is UTF-8. YAML files are Unicode (YAML 1.2 §5.2) and
// JSON output must be (RFC 8259 §8.1), so inputs are checked with this before they are used.
std::size_t first_invalid_utf8(std::string_view text);

}  // namespace clustersim
