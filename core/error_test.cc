#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace clustersim {
namespace error_test {

TEST(InputError, KeepsAMessageOfAFewLinesWhole) {
  const std::string message = "scenario.yaml:3:5: training.seq_len: \"abc\" is not an integer";
  const InputError e(message);
  EXPECT_EQ(e.what(), message);
  EXPECT_FALSE(e.cut());
}

TEST(InputError, CutsAMessageThatQuotesAWholeFileKeepingItsStart) {
  const std::string start = "scenario.yaml:2:8: parallelism.order = \"";
  const std::string message = start + std::string(5000, 'x') + "\"";
  const InputError e(message);
  const std::string what = e.what();
  EXPECT_TRUE(e.cut());
  EXPECT_EQ(what.rfind(start, 0), 0U) << "the location and key stay";
  // kMaxInputErrorBytes of the message, then "... (N more characters)" with N the bytes left out.
  EXPECT_EQ(what, message.substr(0, kMaxInputErrorBytes) + "... (" +
                      std::to_string(message.size() - kMaxInputErrorBytes) + " more characters)");
}

TEST(InputError, AMessageOfExactlyTheBoundIsNotCut) {
  const InputError e(std::string(kMaxInputErrorBytes, 'a'));
  EXPECT_FALSE(e.cut());
  EXPECT_EQ(std::string(e.what()).size(), kMaxInputErrorBytes);
}

TEST(InputError, CarriesALocationOnlyWhenGivenOne) {
  EXPECT_FALSE(InputError("scenario.yaml: no model").location().has_value());
  const InputError e("scenario.yaml:3:5: training.seq_len: \"abc\" is not an integer",
                     InputLocation{.file = "scenario.yaml", .line = 3, .column = 5, .key = "training.seq_len"});
  ASSERT_TRUE(e.location().has_value());
  EXPECT_EQ(e.location()->file, "scenario.yaml");
  EXPECT_EQ(e.location()->line, 3);
  EXPECT_EQ(e.location()->column, 5);
  EXPECT_EQ(e.location()->key, "training.seq_len");
  const InputError copy = e;  // thrown errors are copied
  EXPECT_EQ(copy.location()->key, "training.seq_len");
}

TEST(InputError, CarriesTheKeysItIsAboutWithItsMessage) {
  const InputError plain("model.kv_heads = 8 must divide model.heads = 30");
  EXPECT_TRUE(plain.keys().empty());
  const InputError e = plain.about({"model.kv_heads", "model.heads"});
  EXPECT_EQ(std::string(e.what()), std::string(plain.what()));
  ASSERT_EQ(e.keys().size(), 2u);
  EXPECT_EQ(e.keys()[0], "model.kv_heads");
  EXPECT_EQ(e.keys()[1], "model.heads");
  EXPECT_FALSE(e.location().has_value());
  try {
    throw e;
  } catch (const InputError& caught) {
    EXPECT_EQ(caught.keys(), e.keys());
  }
}

TEST(InputError, AnOverflowErrorIsCutAlike) {
  const OverflowError e(std::string(kMaxInputErrorBytes + 1, 'b'));
  EXPECT_TRUE(e.cut());
}

}  // namespace error_test
}  // namespace clustersim
