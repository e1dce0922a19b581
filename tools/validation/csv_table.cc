#include "tools/validation/csv_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"

namespace clustersim {

CsvTable CsvTable::read(const std::string& path, std::string_view what) {
  return parse(read_input_file(path, std::string(what)), path, what);
}

CsvTable CsvTable::parse(const std::string& text, const std::string& path, std::string_view what) {
  // A NUL byte is binary data (or UTF-16 text), never part of a CSV field.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw InputError(fmt::format("{}:{}: binary data (a NUL byte) at line {}; expected a text CSV file of {} "
                                 "(UTF-8 or ASCII)",
                                 path, line, line, what));
  }
  CsvTable table;
  table.path_ = path;
  table.what_ = std::string(what);
  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  bool quoted = false;
  bool record_open = false;  // a record has started on this line (even with an empty first field)
  int line = 1;
  int quote_line = 0;
  auto end_record = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record = CsvRecord{};
    record_open = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!record_open && c != '\n' && c != '\r') {
      record.line = line;
      record_open = true;
    }
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      quote_line = line;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      if (record_open) end_record();
      ++line;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) {
    throw InputError(fmt::format("{}:{}: the quoted field opened on this line is never closed", path, quote_line));
  }
  if (record_open) end_record();
  if (records.empty()) throw InputError(fmt::format("{}: the {} file is empty (expected a header line)", path, what));

  table.header_ = std::move(records.front().fields);
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].fields.size() != table.header_.size()) {
      throw InputError(fmt::format("{}:{}: {} fields but the header has {} columns", path, records[r].line,
                                   records[r].fields.size(), table.header_.size()));
    }
    table.records_.push_back(std::move(records[r]));
  }
  return table;
}

size_t CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  // The header as read, cut to its first 20 names of at most 40 characters each.
  constexpr size_t kShown = 20;
  std::string present;
  for (size_t i = 0; i < std::min(header_.size(), kShown); ++i) {
    present += (present.empty() ? "" : ", ") + header_[i].substr(0, 40) + (header_[i].size() > 40 ? "..." : "");
  }
  if (header_.size() > kShown) present += fmt::format(", ... ({} columns in all)", header_.size());
  throw InputError(fmt::format("{}: the {} need a column \"{}\"; the header has: {}", path_, what_, name, present));
}

}  // namespace clustersim
