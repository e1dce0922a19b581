#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace clustersim {
namespace utf8_test {

constexpr auto kValid = std::string_view::npos;

TEST(Utf8, AcceptsAsciiAndWellFormedSequencesOfEachLength) {
  EXPECT_EQ(first_invalid_utf8(""), kValid);
  EXPECT_EQ(first_invalid_utf8("model: llama"), kValid);
  EXPECT_EQ(first_invalid_utf8("\xC3\xA9"), kValid);          // U+00E9
  EXPECT_EQ(first_invalid_utf8("\xE2\x82\xAC"), kValid);      // U+20AC
  EXPECT_EQ(first_invalid_utf8("\xF0\x9F\x98\x80"), kValid);  // U+1F600
  EXPECT_EQ(first_invalid_utf8("\xF4\x8F\xBF\xBF"), kValid);  // U+10FFFF, the last code point
}

TEST(Utf8, NamesTheOffsetOfTheFirstBadByte) {
  EXPECT_EQ(first_invalid_utf8("ab\xFF"), 2u);            // never valid in UTF-8
  EXPECT_EQ(first_invalid_utf8("a\x80"), 1u);             // continuation without a lead
  EXPECT_EQ(first_invalid_utf8("abc\xC3"), 3u);           // truncated sequence
  EXPECT_EQ(first_invalid_utf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(first_invalid_utf8("x\xE0\x80\xAF"), 1u);     // overlong 3-byte form
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("\xC3\xA9\xE2\x82"), 2u);  // good, then truncated
}

}  // namespace utf8_test
}  // namespace clustersim
