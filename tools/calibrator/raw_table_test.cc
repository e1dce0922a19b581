#include "tools/calibrator/raw_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/error.h"

namespace clustersim::calibrate {
namespace raw_table_test {

template <typename F>
void expect_input_error(F body, std::initializer_list<std::string> parts) {
  try {
    body();
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

RawTable read(const std::string& text) {
  std::istringstream in(text);
  return read_raw_table(in, "t.csv");
}

TEST(RawTable, WriterOutputReadsBack) {
  std::ostringstream out;
  {
    RawTableWriter writer(out, "memory", {{"gpu_name", "NVIDIA H200"}, {"note", "a: b, c"}},
                          {"test", "size_bytes", "samples_us"});
    writer.add_row({"d2d_copy", "1048576", "1.5 1.25"});
    writer.add_row({"axpy_fp32", "2097152", ""});
    writer.finish({{"elapsed_s", "12.5"}});
  }
  const RawTable table = read(out.str());
  EXPECT_EQ(*table.find_metadata("format"), std::to_string(kRawFormatVersion));
  EXPECT_EQ(*table.find_metadata("kind"), "memory");
  EXPECT_EQ(*table.find_metadata("gpu_name"), "NVIDIA H200");
  EXPECT_EQ(*table.find_metadata("note"), "a: b, c");  // split at the first ": " only
  EXPECT_EQ(*table.find_metadata("elapsed_s"), "12.5");
  EXPECT_TRUE(table.complete());
  EXPECT_EQ(table.find_metadata("missing"), nullptr);
  ASSERT_EQ(table.columns.size(), 3u);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0][table.column_index("samples_us")], "1.5 1.25");
  EXPECT_EQ(table.rows[1][2], "");
  expect_input_error([&] { table.column_index("tflops"); }, {"t.csv", "tflops", "test, size_bytes, samples_us"});
}

TEST(RawTable, FileWithoutFinishIsIncomplete) {
  std::ostringstream out;
  RawTableWriter writer(out, "gemm", {}, {"a"});
  writer.add_row({"1"});
  EXPECT_FALSE(read(out.str()).complete());
}

TEST(RawTable, WriterRejectsCellsThatWouldBreakTheFormat) {
  std::ostringstream out;
  RawTableWriter writer(out, "gemm", {}, {"a", "b"});
  EXPECT_THROW(writer.add_row({"1"}), InternalError);
  EXPECT_THROW(writer.add_row({"1,2", "3"}), InternalError);
  EXPECT_THROW(writer.add_row({"1\n", "3"}), InternalError);
  writer.finish();
  EXPECT_THROW(writer.add_row({"1", "2"}), InternalError);
  EXPECT_THROW(RawTableWriter(out, "gemm", {{"Bad Key", "v"}}, {"a"}), InternalError);
}

TEST(RawTable, ReaderRejectsMalformedFiles) {
  expect_input_error([] { read("# format: 1\n"); }, {"t.csv", "no header"});
  expect_input_error([] { read("# format: 1\na,b\n1,2,3\n"); }, {"t.csv:3", "3 cells", "2 columns"});
  expect_input_error([] { read("# format: 1\na,a\n"); }, {"t.csv:2", "duplicate column 'a'"});
  expect_input_error([] { read("# kind: gemm\n# format: 2\na\n"); },
                     {"t.csv:2: raw-sample format '2' is not supported; expected `# format: 1`"});
  // A CSV without the format line is not a raw-sample file; the message says what one starts with.
  expect_input_error([] { read("a\n"); }, {"t.csv: not a clustersim-calibrate raw-sample file: no `# format: 1` line",
                                           "`# clustersim-calibrate raw samples`"});
  // Before the header, whose names another CSV need not write as raw files do.
  expect_input_error([] { read("Size_GB,time\n1,2\n"); }, {"t.csv: not a clustersim-calibrate raw-sample file"});
  // Binary data (or UTF-16 text) is named with its line, not parsed as cells.
  expect_input_error([] { read(std::string("# format: 1\na,b\n1,2\n3,") + '\0' + "\n"); },
                     {"t.csv:4: binary data (a NUL byte) at line 4; expected a text CSV file"});
  expect_input_error([] { read_raw_table_file("/nonexistent.csv"); }, {"/nonexistent.csv"});
}

}  // namespace raw_table_test
}  // namespace clustersim::calibrate
