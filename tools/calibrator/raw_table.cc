#include "tools/calibrator/raw_table.h"

#include <fstream>
#include <ostream>
#include <set>

#include "core/error.h"

namespace clustersim::calibrate {

namespace {

constexpr std::string_view kTitle = "# clustersim-calibrate raw samples";

bool is_key(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool is_clean_cell(std::string_view cell) {
  return cell.find_first_of(",\"\r\n") == std::string_view::npos;
}

bool is_clean_value(std::string_view value) { return value.find_first_of("\r\n") == std::string_view::npos; }

std::vector<std::string> split_cells(std::string_view line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    cells.emplace_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

void write_metadata_line(std::ostream& out, const std::string& key, const std::string& value) {
  check_invariant(is_key(key), "raw table: metadata key must match [a-z0-9_]+");
  check_invariant(is_clean_value(value), "raw table: metadata value holds a line break");
  out << "# " << key << ": " << value << '\n';
}

}  // namespace

const std::string* RawTable::find_metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

size_t RawTable::column_index(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return i;
  }
  std::string names;
  for (const auto& c : columns) names += (names.empty() ? "" : ", ") + c;
  throw InputError(source + ": no column '" + std::string(name) + "'; columns are " + names);
}

bool RawTable::complete() const {
  const std::string* value = find_metadata("complete");
  return value != nullptr && *value == "true";
}

RawTableWriter::RawTableWriter(std::ostream& out, std::string_view kind, const Metadata& metadata,
                               std::vector<std::string> columns)
    : out_(out), columns_(std::move(columns)) {
  check_invariant(!columns_.empty(), "raw table: no columns");
  out_ << kTitle << '\n';
  write_metadata_line(out_, "format", std::to_string(kRawFormatVersion));
  write_metadata_line(out_, "kind", std::string(kind));
  for (const auto& [key, value] : metadata) write_metadata_line(out_, key, value);
  for (size_t i = 0; i < columns_.size(); ++i) {
    check_invariant(is_key(columns_[i]), "raw table: column names must match [a-z0-9_]+");
    out_ << (i ? "," : "") << columns_[i];
  }
  out_ << '\n';
  out_.flush();
}

void RawTableWriter::add_row(const std::vector<std::string>& cells) {
  check_invariant(!finished_, "raw table: row after finish()");
  check_invariant(cells.size() == columns_.size(), "raw table: cell count differs from columns");
  for (size_t i = 0; i < cells.size(); ++i) {
    check_invariant(is_clean_cell(cells[i]), "raw table: cell holds a comma, quote or line break");
    out_ << (i ? "," : "") << cells[i];
  }
  out_ << '\n';
  out_.flush();
}

void RawTableWriter::finish(const Metadata& metadata) {
  check_invariant(!finished_, "raw table: finish() called twice");
  for (const auto& [key, value] : metadata) write_metadata_line(out_, key, value);
  write_metadata_line(out_, "complete", "true");
  out_.flush();
  finished_ = true;
}

std::string RawTable::row_location(size_t row) const {
  if (row < row_lines.size()) return source + ":" + std::to_string(row_lines[row]);
  return source + ": data row " + std::to_string(row + 1);
}

RawTable read_raw_table(std::istream& in, std::string_view source) {
  RawTable table;
  table.source = std::string(source);
  std::string line;
  int line_number = 0;
  int format_line = 0;  // the first `# format:` line, for messages
  // The format line comes before the header: a CSV without it is some other file (its header may
  // not even follow the column-name rule), and another version may have other columns.
  const auto check_format = [&] {
    const std::string* format = table.find_metadata("format");
    const std::string expected = "`# format: " + std::to_string(kRawFormatVersion) + "`";
    if (format == nullptr) {
      throw InputError(table.source + ": not a clustersim-calibrate raw-sample file: no " + expected +
                       " line before the header (the files clustersim-calibrate writes start with `" +
                       std::string(kTitle) + "` and " + expected + ")");
    }
    if (*format != std::to_string(kRawFormatVersion)) {
      throw InputError(table.source + ":" + std::to_string(format_line) + ": raw-sample format '" + *format +
                       "' is not supported; expected " + expected);
    }
  };
  while (std::getline(in, line)) {
    ++line_number;
    const std::string where = table.source + ":" + std::to_string(line_number);
    if (line.find('\0') != std::string::npos) {
      throw InputError(where + ": binary data (a NUL byte) at line " + std::to_string(line_number) +
                       "; expected a text CSV file of clustersim-calibrate raw samples");
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::string_view text(line);
      text.remove_prefix(1);
      if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
      const size_t colon = text.find(": ");
      if (colon != std::string_view::npos && is_key(text.substr(0, colon))) {
        if (text.substr(0, colon) == "format" && format_line == 0) format_line = line_number;
        table.metadata.emplace_back(std::string(text.substr(0, colon)), std::string(text.substr(colon + 2)));
      }
      continue;
    }
    std::vector<std::string> cells = split_cells(line);
    if (table.columns.empty()) {
      check_format();
      std::set<std::string> seen;
      for (const auto& name : cells) {
        if (!is_key(name)) throw InputError(where + ": column name '" + name + "' must match [a-z0-9_]+");
        if (!seen.insert(name).second) throw InputError(where + ": duplicate column '" + name + "'");
      }
      table.columns = std::move(cells);
      continue;
    }
    if (cells.size() != table.columns.size()) {
      throw InputError(where + ": " + std::to_string(cells.size()) + " cells, but the header has " +
                       std::to_string(table.columns.size()) + " columns");
    }
    table.rows.push_back(std::move(cells));
    table.row_lines.push_back(line_number);
  }
  if (in.bad()) throw InputError(table.source + ": read error");
  check_format();
  if (table.columns.empty()) throw InputError(table.source + ": no header line of column names");
  return table;
}

RawTable read_raw_table_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("raw sample file '" + path + "' cannot be opened");
  return read_raw_table(in, path);
}

}  // namespace clustersim::calibrate
