#include "tools/validation/csv_table.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace csv_table_test {

TEST(CsvTable, QuotedFieldsKeepCommasQuotesAndLineBreaks) {
  const CsvTable t = CsvTable::parse(
      "a,b,c\n"
      "1,\"x, y\",\"say \"\"hi\"\"\"\n"
      "2,\"two\nlines\",\n",
      "t.csv", "test data");
  ASSERT_EQ(t.records().size(), 2u);
  EXPECT_EQ(t.records()[0].fields[1], "x, y");
  EXPECT_EQ(t.records()[0].fields[2], "say \"hi\"");
  EXPECT_EQ(t.records()[0].line, 2);
  EXPECT_EQ(t.records()[1].fields[1], "two\nlines");
  EXPECT_EQ(t.records()[1].fields[2], "");  // a trailing empty field
  EXPECT_EQ(t.records()[1].line, 3);
  EXPECT_EQ(t.column("c"), 2u);
}

TEST(CsvTable, CarriageReturnsAndBlankLinesAreIgnored) {
  const CsvTable t = CsvTable::parse("a,b\r\n1,2\r\n\r\n3,4", "t.csv", "test data");
  ASSERT_EQ(t.records().size(), 2u);
  EXPECT_EQ(t.records()[1].fields[1], "4");
  EXPECT_EQ(t.records()[1].line, 4);
}

TEST(CsvTable, BadInputNamesFileLineAndWhatIsExpected) {
  try {
    CsvTable::parse("a,b\n1,2\n3\n", "t.csv", "test data");
    FAIL() << "a short record must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:3: 1 fields but the header has 2 columns"), std::string::npos)
        << e.what();
  }
  try {
    CsvTable::parse("a,b\n1,\"open\n", "t.csv", "test data");
    FAIL() << "an unterminated quote must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:2"), std::string::npos) << e.what();
  }
  const CsvTable t = CsvTable::parse("a,b\n", "t.csv", "test data");
  try {
    t.column("metric_name");
    FAIL() << "a missing column must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"metric_name\"; the header has: a, b"), std::string::npos) << e.what();
  }
  // Binary data (or UTF-16 text): a NUL byte is named with its line, not split into fields.
  try {
    CsvTable::parse(std::string("a,b\n1,2\n\"x\ny\",") + '\0' + "\n", "t.csv", "test data");
    FAIL() << "a NUL byte must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:4: binary data (a NUL byte) at line 4; expected a text CSV file of "
                                         "test data"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CsvTable::parse("", "t.csv", "test data"), InputError);
  EXPECT_THROW(CsvTable::read("/nonexistent/t.csv", "test data"), InputError);
}

}  // namespace csv_table_test
}  // namespace clustersim
