#pragma once

// A comma-separated table as RFC 4180 writes it: the first record names the columns, fields with
// commas, quotes or line breaks are enclosed in double quotes, and "" inside them is one quote.
// Every record remembers the line it starts on, so that messages can name file and line.

#include <string>
#include <string_view>
#include <vector>

namespace clustersim {

struct CsvRecord {
  int line = 0;                     // 1-based line of the record's first character
  std::vector<std::string> fields;  // as many as the header has columns
};

class CsvTable {
 public:
  // Reads `path`. `what` names the data in messages ("training measurements"). Throws InputError for
  // an unreadable or empty file, an unterminated quote, and a record whose field count differs from
  // the header's (naming file, line, and both counts).
  static CsvTable read(const std::string& path, std::string_view what);
  // The same for text already in memory; `path` is only used in messages.
  static CsvTable parse(const std::string& text, const std::string& path, std::string_view what);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<CsvRecord>& records() const { return records_; }

  // Index of column `name`. Throws InputError naming the file, the column and the columns present.
  size_t column(std::string_view name) const;

 private:
  std::string path_;
  std::string what_;
  std::vector<std::string> header_;
  std::vector<CsvRecord> records_;
};

}  // namespace clustersim
