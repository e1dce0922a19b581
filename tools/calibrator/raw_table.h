#pragma once

// The raw-sample file format of clustersim-calibrate (one file per kind: gemm, memory, launch,
// nccl; documented in tools/calibrator/README.md):
//
//     # clustersim-calibrate raw samples
//     # format: 1
//     # kind: gemm
//     # gpu_name: NVIDIA H200            <- machine description and run settings, `# key: value`
//     set,label,dtype,m,n,k,...          <- one header line of column names
//     square,,bf16,256,256,256,...       <- one row per measured point
//     # complete: true                   <- written last; a file without it was cut short
//
// Cells hold no commas, quotes or line breaks (lists inside a cell are space-separated), so a
// plain split on ',' reads them; keys are [a-z0-9_]+. Lines starting with '#' that are not
// `# key: value` are comments.

#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::calibrate {

using Metadata = std::vector<std::pair<std::string, std::string>>;

// Version of the layout above; readers reject other versions.
inline constexpr int kRawFormatVersion = 1;

// A whole raw-sample file in memory, cells as text.
struct RawTable {
  Metadata metadata;  // every `# key: value` line, in file order
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each has columns.size() cells
  std::vector<int> row_lines;                  // 1-based line of each row in the file (comment and
                                               // header lines counted); empty if built in memory
  std::string source;                          // file name for messages

  // "source:line" of data row `row` (0-based) for messages; "source: data row N" (1-based) when
  // row_lines does not have it.
  std::string row_location(size_t row) const;

  // The value of the first metadata line with `key`, or nullptr.
  const std::string* find_metadata(std::string_view key) const;
  // Index of column `name`. Throws InputError naming the source, the column and the columns there.
  size_t column_index(std::string_view name) const;
  // True when the writer finished the file (`# complete: true`).
  bool complete() const;
};

// Writes one raw-sample file as rows arrive (flushing each, so a run cut short keeps its rows).
class RawTableWriter {
 public:
  // Writes the title line, `format`, `kind`, then `metadata` and the header line.
  // Throws InternalError for an invalid key or value, or a column name with a comma.
  RawTableWriter(std::ostream& out, std::string_view kind, const Metadata& metadata,
                 std::vector<std::string> columns);

  // Throws InternalError when the cell count differs from the column count or a cell holds ',',
  // '"' or a line break.
  void add_row(const std::vector<std::string>& cells);

  // Appends `metadata` lines and `# complete: true`. Further calls throw InternalError.
  void finish(const Metadata& metadata = {});

 private:
  std::ostream& out_;
  std::vector<std::string> columns_;
  bool finished_ = false;
};

// Reads a raw-sample file; `source` names it in messages. Throws InputError "source:line: ..."
// for no `# format:` line before the header (not a raw-sample file), a format version other than
// kRawFormatVersion, a missing header, a row with the wrong cell count, a duplicate column and
// binary data (a NUL byte).
RawTable read_raw_table(std::istream& in, std::string_view source);
RawTable read_raw_table_file(const std::string& path);

}  // namespace clustersim::calibrate
