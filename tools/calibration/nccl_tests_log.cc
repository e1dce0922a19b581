#include "tools/calibration/nccl_tests_log.h"

#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/input_file.h"

namespace clustersim {

namespace {

constexpr std::array<std::pair<std::string_view, CollectiveOp>, 7> kBinaries{{
    {"all_reduce_perf", CollectiveOp::kAllReduce},
    {"all_gather_perf", CollectiveOp::kAllGather},
    {"reduce_scatter_perf", CollectiveOp::kReduceScatter},
    {"broadcast_perf", CollectiveOp::kBroadcast},
    {"reduce_perf", CollectiveOp::kReduce},
    {"alltoall_perf", CollectiveOp::kAllToAll},
    {"sendrecv_perf", CollectiveOp::kSendRecv},
}};

std::vector<std::string> tokens_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

bool is_wrong_column(std::string_view c) { return c == "#wrong" || c == "wrong" || c == "error"; }

// NCCL's debug output ("host:pid:tid [dev] NCCL INFO ...") may be interleaved with the table.
bool is_nccl_debug_line(const std::string& line) {
  return line.find(" NCCL INFO ") != std::string::npos || line.find(" NCCL WARN ") != std::string::npos ||
         line.find(" NCCL TRACE ") != std::string::npos;
}

// Column layout of one log's table.
struct ColumnLayout {
  bool root = false;
  size_t columns = 0;
  double time_scale_us = 1.0;  // multiplies the time columns into µs
};

class Parser {
 public:
  Parser(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(int line, const std::string& why) const {
    throw InputError(fmt::format("{}:{}: {}", source_, line, why));
  }

  int64_t integer(const std::string& text, int line, std::string_view column) const {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      fail(line, fmt::format("column \"{}\": \"{}\" is not an integer", column, text));
    }
    return value;
  }

  double number(const std::string& text, int line, std::string_view column) const {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      fail(line, fmt::format("column \"{}\": \"{}\" is not a number", column, text));
    }
    return value;
  }

  Duration time(const std::string& text, int line, std::string_view column, double scale_us) const {
    const double t = number(text, line, column);
    if (t <= 0) fail(line, fmt::format("column \"{}\": time {} must be positive", column, text));
    return Duration::microseconds(t * scale_us);
  }

 private:
  std::string_view source_;
};

}  // namespace

std::optional<CollectiveOp> collective_of_nccl_test(std::string_view binary) {
  const size_t slash = binary.find_last_of('/');
  if (slash != std::string_view::npos) binary = binary.substr(slash + 1);
  for (const auto& [name, op] : kBinaries) {
    if (binary == name) return op;
  }
  return std::nullopt;
}

NcclTestsLog parse_nccl_tests_log(std::istream& in, std::string_view source) {
  const Parser p(source);
  NcclTestsLog log;
  log.source = std::string(source);
  std::optional<ColumnLayout> layout;
  bool done = false;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find('\0') != std::string::npos) {
      p.fail(number, fmt::format("binary data (a NUL byte) at line {}; expected the text output of an nccl-tests "
                                 "binary",
                                 number));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (is_nccl_debug_line(line)) continue;
    const std::vector<std::string> t = tokens_of(line);
    if (t.empty()) continue;
    const bool comment = t[0][0] == '#';
    std::vector<std::string> fields = t;
    if (comment) {
      // "#size" glued to the hash in some versions.
      fields[0] = fields[0].substr(1);
      if (fields[0].empty()) fields.erase(fields.begin());
    }
    if (!layout) {
      for (const std::string& token : t) {
        if (!log.op) log.op = collective_of_nccl_test(token);
      }
      if (comment && fields.size() >= 2 && fields[0] == "Rank") {
        ++log.listed_ranks;
        for (size_t i = 0; i + 1 < fields.size(); ++i) {
          if (fields[i] == "on") log.hosts.insert(fields[i + 1]);
        }
        continue;
      }
      if (comment && fields.size() >= 4 && fields[0] == "size" && fields[1] == "count") {
        ColumnLayout l;
        if (fields[2] != "type" || fields[3] != "redop") {
          p.fail(number, fmt::format("unexpected nccl-tests header \"{}\" (expected size count type redop [root] "
                                     "time algbw busbw #wrong time algbw busbw #wrong)",
                                     excerpt(line, 120)));
        }
        size_t i = 4;
        if (i < fields.size() && fields[i] == "root") {
          l.root = true;
          ++i;
        }
        for (int group = 0; group < 2; ++group, i += 4) {
          if (i + 4 > fields.size() || fields[i] != "time" || fields[i + 1] != "algbw" || fields[i + 2] != "busbw" ||
              !is_wrong_column(fields[i + 3])) {
            p.fail(number, fmt::format("unexpected nccl-tests header \"{}\": expected time algbw busbw #wrong for "
                                       "the {} results",
                                       excerpt(line, 120), group == 0 ? "out-of-place" : "in-place"));
          }
        }
        if (i != fields.size()) p.fail(number, fmt::format("unexpected extra columns in the header \"{}\"", excerpt(line, 120)));
        l.columns = i;
        layout = l;
      }
      continue;
    }
    if (comment) {
      if (fields.size() >= 2 && fields[0] == "size" && fields[1] == "count") {
        p.fail(number, "a second nccl-tests table in one log: give each test's log separately");
      }
      // Units line: "(B) (elements) (us) (GB/s) ...".
      for (const std::string& f : fields) {
        if (f == "(ms)") layout->time_scale_us = 1000.0;
      }
      const size_t colon = line.find(':');
      if (line.find("Avg bus bandwidth") != std::string::npos && colon != std::string::npos) {
        const std::vector<std::string> value = tokens_of(line.substr(colon + 1));
        if (value.empty()) p.fail(number, "\"Avg bus bandwidth\" without a value");
        log.average_bus_bandwidth_gbps = p.number(value.front(), number, "Avg bus bandwidth");
        done = true;
      }
      continue;
    }
    if (done) continue;  // output after the footer (another program's lines)
    const ColumnLayout& l = *layout;
    if (t.size() != l.columns) {
      p.fail(number, fmt::format("expected {} columns (size count type redop{} time algbw busbw #wrong, out-of-place "
                                 "and in-place), got {}: \"{}\"",
                                 l.columns, l.root ? " root" : "", t.size(), excerpt(line, 120)));
    }
    NcclTestsRow row;
    row.line = number;
    const int64_t size = p.integer(t[0], number, "size");
    if (size < 0) p.fail(number, fmt::format("column \"size\": {} must not be negative", size));
    row.size = Bytes::of(size);
    row.count = p.integer(t[1], number, "count");
    if (row.count < 0) p.fail(number, fmt::format("column \"count\": {} must not be negative", row.count));
    row.type = t[2];
    row.redop = t[3];
    size_t i = 4;
    if (l.root) row.root = p.integer(t[i++], number, "root");
    row.out_of_place_time = p.time(t[i], number, "out-of-place time", l.time_scale_us);
    row.out_of_place_algbw_gbps = p.number(t[i + 1], number, "out-of-place algbw");
    row.out_of_place_busbw_gbps = p.number(t[i + 2], number, "out-of-place busbw");
    if (t[i + 3] != "N/A" && l.columns > 0) {
      int64_t wrong = 0;
      const auto [end, ec] = std::from_chars(t[i + 3].data(), t[i + 3].data() + t[i + 3].size(), wrong);
      if (ec == std::errc() && end == t[i + 3].data() + t[i + 3].size()) row.out_of_place_wrong = wrong;
    }
    i += 4;
    if (t[i] != "N/A") {
      row.in_place_time = p.time(t[i], number, "in-place time", l.time_scale_us);
      row.in_place_algbw_gbps = p.number(t[i + 1], number, "in-place algbw");
      row.in_place_busbw_gbps = p.number(t[i + 2], number, "in-place busbw");
    }
    if (!log.rows.empty() && (row.type != log.rows.front().type || row.redop != log.rows.front().redop)) {
      p.fail(number, fmt::format("rows of type {} / {} after rows of {} / {}: fit one data type and reduction op per "
                                 "log (nccl-tests -d TYPE -o OP)",
                                 row.type, row.redop, log.rows.front().type, log.rows.front().redop));
    }
    log.rows.push_back(row);
  }
  if (!layout) {
    throw InputError(fmt::format("{}: no nccl-tests table found (a \"#  size  count  type  redop ...\" header line)",
                                 source));
  }
  if (log.rows.empty()) throw InputError(fmt::format("{}: the nccl-tests table has no rows", source));
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  std::istringstream in(read_input_file(path, "nccl-tests log"));
  return parse_nccl_tests_log(in, path);
}

}  // namespace clustersim
