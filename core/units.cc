#include "core/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw OverflowError(fmt::format("{} overflows int64", what));
  return r;
}

int64_t checked_sub(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw OverflowError(fmt::format("{} overflows int64", what));
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw OverflowError(fmt::format("{} overflows int64", what));
  return r;
}

int64_t checked_round(double value, const char* what) {
  // 2^63 is exactly representable; anything at or above it does not fit.
  constexpr double kLimit = 9223372036854775808.0;
  if (!std::isfinite(value) || value >= kLimit || value < -kLimit) {
    throw OverflowError(fmt::format("{} ({}) does not fit int64", what, value));
  }
  return static_cast<int64_t>(std::llround(value));
}

// Rounds a non-negative real up to an int64, for the two rate conversions.
static int64_t checked_ceil(long double value, const char* what) {
  constexpr long double kLimit = 9223372036854775808.0L;
  if (!(value < kLimit)) throw OverflowError(fmt::format("{} does not fit int64 picoseconds", what));
  return static_cast<int64_t>(std::ceil(value));
}

Duration Duration::nanoseconds(double ns) { return Duration(checked_round(ns * 1e3, "duration")); }
Duration Duration::microseconds(double us) { return Duration(checked_round(us * 1e6, "duration")); }
Duration Duration::milliseconds(double ms) { return Duration(checked_round(ms * 1e9, "duration")); }
Duration Duration::seconds(double s) { return Duration(checked_round(s * 1e12, "duration")); }

Duration Duration::scaled(double factor) const {
  return Duration(checked_round(static_cast<double>(ps_) * factor, "scaled duration"));
}

Bytes Bytes::of(int64_t count) {
  if (count < 0) throw InputError(fmt::format("a size cannot be negative (got {} bytes)", count));
  return Bytes(count);
}

static Bytes bytes_from_real(double n, double unit) {
  if (!(n >= 0)) throw InputError(fmt::format("a size cannot be negative (got {})", n));
  return Bytes::of(checked_round(n * unit, "size in bytes"));
}

Bytes Bytes::kilobytes(double n) { return bytes_from_real(n, 1e3); }
Bytes Bytes::megabytes(double n) { return bytes_from_real(n, 1e6); }
Bytes Bytes::gigabytes(double n) { return bytes_from_real(n, 1e9); }
Bytes Bytes::kibibytes(double n) { return bytes_from_real(n, 1024.0); }
Bytes Bytes::mebibytes(double n) { return bytes_from_real(n, 1048576.0); }
Bytes Bytes::gibibytes(double n) { return bytes_from_real(n, 1073741824.0); }

Bytes Bytes::operator-(Bytes other) const { return Bytes::of(checked_sub(count_, other.count_, "byte difference")); }

Bytes Bytes::operator*(int64_t factor) const { return Bytes::of(checked_mul(count_, factor, "byte product")); }

Bytes Bytes::divided_ceil(int64_t parts) const {
  check_invariant(parts > 0, "Bytes::divided_ceil needs a positive number of parts");
  return Bytes(count_ / parts + (count_ % parts != 0 ? 1 : 0));
}

Bytes Bytes::scaled(double factor) const { return bytes_from_real(static_cast<double>(count_) * factor, 1.0); }

long double transfer_picoseconds(Bytes size, Bandwidth bandwidth) {
  check_invariant(bandwidth.is_positive(), "transfer_time needs a positive bandwidth");
  return static_cast<long double>(size.count()) * 1e12L / static_cast<long double>(bandwidth.bytes_per_second());
}

Duration transfer_time(Bytes size, Bandwidth bandwidth) {
  check_invariant(bandwidth.is_positive(), "transfer_time needs a positive bandwidth");
  // Fast path in double (x87 long double division is about ten times slower, and the flow network
  // calls this for every rate change): the double quotient is within 2 ulps (relative 4.5e-16) of
  // the exact one, as the long double one is within 2 of its own, so where the double quotient
  // lies farther than that from an integer both round up to the same one. Elsewhere, and above
  // 2^53 ps, the long double path decides: the result is the same either way.
  const double ps = static_cast<double>(size.count()) * 1e12 / bandwidth.bytes_per_second();
  if (ps < 9.0e15) {
    const double up = std::ceil(ps);
    const double margin = ps * 1e-15;
    if (up - ps > margin && ps - (up - 1.0) > margin) return Duration::picoseconds(static_cast<int64_t>(up));
  }
  return Duration::picoseconds(checked_ceil(transfer_picoseconds(size, bandwidth), "transfer time"));
}

Duration compute_time(double flops, FlopRate rate) {
  check_invariant(rate.flop_per_second() > 0, "compute_time needs a positive FLOP rate");
  check_invariant(flops >= 0, "compute_time needs a non-negative FLOP count");
  const long double ps = static_cast<long double>(flops) * 1e12L / static_cast<long double>(rate.flop_per_second());
  return Duration::picoseconds(checked_ceil(ps, "compute time"));
}

Bandwidth rate_of(Bytes size, Duration time) {
  check_invariant(time.ps() > 0, "rate_of needs a positive duration");
  return Bandwidth::bytes_per_s(static_cast<double>(size.count()) / time.to_seconds());
}

namespace {

struct UnitEntry {
  std::string_view name;
  double scale;  // multiplier to the base unit (ps, bytes, bytes/s, FLOP/s)
};

constexpr std::array kDurationUnits{
    UnitEntry{"ps", 1.0}, UnitEntry{"ns", 1e3}, UnitEntry{"us", 1e6}, UnitEntry{"µs", 1e6},
    UnitEntry{"ms", 1e9}, UnitEntry{"s", 1e12}, UnitEntry{"min", 60e12}, UnitEntry{"h", 3600e12},
};
constexpr std::array kByteUnits{
    UnitEntry{"B", 1.0},           UnitEntry{"KB", 1e3},          UnitEntry{"MB", 1e6},
    UnitEntry{"GB", 1e9},          UnitEntry{"TB", 1e12},         UnitEntry{"KiB", 1024.0},
    UnitEntry{"MiB", 1048576.0},   UnitEntry{"GiB", 1073741824.0}, UnitEntry{"TiB", 1099511627776.0},
};
constexpr std::array kBandwidthUnits{
    UnitEntry{"b/s", 1.0 / 8},   UnitEntry{"Kb/s", 1e3 / 8},   UnitEntry{"Mb/s", 1e6 / 8},
    UnitEntry{"Gb/s", 1e9 / 8},  UnitEntry{"Tb/s", 1e12 / 8},  UnitEntry{"B/s", 1.0},
    UnitEntry{"KB/s", 1e3},      UnitEntry{"MB/s", 1e6},       UnitEntry{"GB/s", 1e9},
    UnitEntry{"TB/s", 1e12},     UnitEntry{"KiB/s", 1024.0},   UnitEntry{"MiB/s", 1048576.0},
    UnitEntry{"GiB/s", 1073741824.0},
};
constexpr std::array kFlopUnits{
    UnitEntry{"FLOP/s", 1.0}, UnitEntry{"GFLOP/s", 1e9}, UnitEntry{"TFLOP/s", 1e12}, UnitEntry{"PFLOP/s", 1e15},
};

constexpr std::array kPowerUnits{UnitEntry{"W", 1.0}, UnitEntry{"kW", 1e3}, UnitEntry{"MW", 1e6}};

template <size_t N>
std::string unit_list(const std::array<UnitEntry, N>& units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

// Splits "<number> <unit>" and returns number × unit scale. `kind` names the quantity in errors.
template <size_t N>
double parse_quantity(std::string_view text, const std::array<UnitEntry, N>& units, std::string_view kind,
                      std::string_view example) {
  auto fail = [&](std::string_view why) -> InputError {
    return InputError(fmt::format("invalid {} \"{}\": {}; write a number and a unit, e.g. \"{}\" (units: {})", kind,
                                  excerpt(text), why, example, unit_list(units)));
  };
  size_t begin = 0;
  while (begin < text.size() && text[begin] == ' ') ++begin;
  size_t end = text.size();
  while (end > begin && text[end - 1] == ' ') --end;
  const std::string_view trimmed = text.substr(begin, end - begin);
  if (trimmed.empty()) throw fail("it is empty");

  double value = 0;
  const char* first = trimmed.data();
  const char* last = trimmed.data() + trimmed.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) throw fail("the number is out of range of a double (about 1e308)");
  if (ec != std::errc() || ptr == first) throw fail("it does not start with a number");
  if (!std::isfinite(value)) throw fail("the number is not finite");
  std::string_view unit(ptr, static_cast<size_t>(last - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty()) throw fail("it has no unit (a bare number is ambiguous)");
  for (const auto& u : units) {
    if (u.name == unit) {
      if (value < 0) throw fail("it is negative");
      return value * u.scale;
    }
  }
  throw fail(fmt::format("unknown unit \"{}\"", excerpt(unit)));
}

}  // namespace

bool parse_whole_number(std::string_view text, int64_t& value) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (auto [ptr, ec] = std::from_chars(first, last, value); ec == std::errc() && ptr == last) return true;
  if (text.find_first_of(".eE") == std::string_view::npos) return false;
  double real = 0;
  auto [ptr, ec] = std::from_chars(first, last, real);
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (ec != std::errc() || ptr != last || !std::isfinite(real) || std::abs(real) > kExact ||
      real != std::floor(real)) {
    return false;
  }
  value = static_cast<int64_t>(real);
  return true;
}

Duration parse_duration(std::string_view text) {
  const double ps = parse_quantity(text, kDurationUnits, "duration", "1.5 us");
  return Duration::picoseconds(checked_round(ps, "duration"));
}

Bytes parse_bytes(std::string_view text) {
  const double bytes = parse_quantity(text, kByteUnits, "size", "80 GiB");
  return Bytes::of(checked_round(bytes, "size"));
}

Bandwidth parse_bandwidth(std::string_view text) {
  const double bps = parse_quantity(text, kBandwidthUnits, "bandwidth", "400 Gb/s");
  if (!(bps > 0)) {
    throw InputError(fmt::format("invalid bandwidth \"{}\": it must be greater than zero", excerpt(text)));
  }
  return Bandwidth::bytes_per_s(bps);
}

FlopRate parse_flop_rate(std::string_view text) {
  const double rate = parse_quantity(text, kFlopUnits, "FLOP rate", "989 TFLOP/s");
  if (!(rate > 0)) {
    throw InputError(fmt::format("invalid FLOP rate \"{}\": it must be greater than zero", excerpt(text)));
  }
  return FlopRate::flop_per_s(rate);
}

Power parse_power(std::string_view text) {
  return Power::watts(parse_quantity(text, kPowerUnits, "power", "700 W"));
}

std::string to_string(Duration d) {
  const double ps = static_cast<double>(d.ps());
  const double mag = std::fabs(ps);
  if (mag >= 1e12) return fmt::format("{:.3f} s", ps * 1e-12);
  if (mag >= 1e9) return fmt::format("{:.3f} ms", ps * 1e-9);
  if (mag >= 1e6) return fmt::format("{:.3f} us", ps * 1e-6);
  if (mag >= 1e3) return fmt::format("{:.3f} ns", ps * 1e-3);
  return fmt::format("{} ps", d.ps());
}

std::string to_string(Bytes b) {
  const double n = static_cast<double>(b.count());
  if (n >= 1073741824.0) return fmt::format("{:.2f} GiB", n / 1073741824.0);
  if (n >= 1048576.0) return fmt::format("{:.2f} MiB", n / 1048576.0);
  if (n >= 1024.0) return fmt::format("{:.2f} KiB", n / 1024.0);
  return fmt::format("{} B", b.count());
}

std::string to_string(Bandwidth bw) { return fmt::format("{:.6g} GB/s", bw.gigabytes_per_second()); }

std::string to_string(FlopRate rate) { return fmt::format("{:.6g} TFLOP/s", rate.teraflop_per_second()); }

std::string to_string(Power power) { return fmt::format("{:.6g} W", power.in_watts()); }

}  // namespace clustersim
