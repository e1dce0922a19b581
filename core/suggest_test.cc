#include "core/suggest.h"

#include <gtest/gtest.h>

namespace clustersim {
namespace {

TEST(Suggest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("--set", "--set"), 0u);
  EXPECT_EQ(edit_distance("--sett", "--set"), 1u);   // one insertion
  EXPECT_EQ(edit_distance("seq_len", "seqlen"), 1u); // one deletion
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u); // the textbook case: 2 substitutions, 1 insertion
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Suggest, ClosestMatchOnlyWithinTheBound) {
  const std::vector<std::string> flags{"--set", "--json", "--trace", "--quiet"};
  EXPECT_EQ(closest_match("--sett", flags), "--set");
  EXPECT_EQ(closest_match("--jsno", flags), "--json");  // two substitutions
  EXPECT_EQ(closest_match("--output-everything", flags), "");
  EXPECT_EQ(closest_match("--sett", flags, 1), "");  // nearer than 1: only the word itself
  EXPECT_EQ(closest_match("--x", {}), "");
}

}  // namespace
}  // namespace clustersim
