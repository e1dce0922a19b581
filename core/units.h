#pragma once

// Quantities of the model as small value types.
//
// Simulated time is an integer count of picoseconds (as gem5's Tick and htsim's simtime_picosec):
// int64 covers 106 days, and every sum is overflow-checked. Sizes are integer bytes. Rates
// (bandwidth, FLOP rate) are doubles, because max-min fair shares of a link are fractions; the only
// places where a rate turns into time are transfer_time() and compute_time() below, and both round
// up to the next picosecond.
//
// Unit conventions (DESIGN.md): GB = 1e9 bytes, GiB = 2^30 bytes, Gb/s = 1e9 bits/s, GB/s = 1e9
// bytes/s, GiB/s = 2^30 bytes/s. Nothing converts between decimal and binary prefixes silently.

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

// Overflow-checked int64 arithmetic. Throws OverflowError naming `what` on overflow.
int64_t checked_add(int64_t a, int64_t b, const char* what);
int64_t checked_sub(int64_t a, int64_t b, const char* what);
int64_t checked_mul(int64_t a, int64_t b, const char* what);
// Rounds a / b up, for a >= 0 and b > 0 (tiles, waves and chunks of a size).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Rounds a finite double to the nearest int64; throws OverflowError if it does not fit or is NaN.
int64_t checked_round(double value, const char* what);

// A span of simulated time in picoseconds. May be negative only as the result of a subtraction;
// model code keeps durations non-negative.
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration picoseconds(int64_t ps) { return Duration(ps); }
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration max() { return Duration(INT64_MAX); }
  // Named constructors from real-valued amounts round to the nearest picosecond.
  // Throw OverflowError beyond ±2^63 ps (about 106 days).
  static Duration nanoseconds(double ns);
  static Duration microseconds(double us);
  static Duration milliseconds(double ms);
  static Duration seconds(double s);

  constexpr int64_t ps() const { return ps_; }
  // Real-valued views for reports and fits only; model code stays in integer picoseconds.
  double to_seconds() const { return static_cast<double>(ps_) * 1e-12; }
  double to_microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  Duration operator+(Duration other) const { return Duration(checked_add(ps_, other.ps_, "duration sum")); }
  Duration operator-(Duration other) const {
    return Duration(checked_sub(ps_, other.ps_, "duration difference"));
  }
  Duration& operator+=(Duration other) { return *this = *this + other; }
  Duration& operator-=(Duration other) { return *this = *this - other; }
  Duration operator*(int64_t factor) const { return Duration(checked_mul(ps_, factor, "duration product")); }
  // Scales by a real factor (efficiency, fraction of work), rounding to the nearest picosecond.
  Duration scaled(double factor) const;
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

// A point of simulated time: picoseconds since the start of the simulation.
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time zero() { return Time(0); }
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static constexpr Time max() { return Time(INT64_MAX); }
  constexpr int64_t ps() const { return ps_; }
  double to_seconds() const { return static_cast<double>(ps_) * 1e-12; }

  Time operator+(Duration d) const { return Time(checked_add(ps_, d.ps(), "time + duration")); }
  Time& operator+=(Duration d) { return *this = *this + d; }
  Duration operator-(Time other) const {
    return Duration::picoseconds(checked_sub(ps_, other.ps_, "time difference"));
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

// A non-negative amount of data in bytes (int64: up to 8 EiB).
class Bytes {
 public:
  constexpr Bytes() = default;
  // Throws InputError for a negative count.
  static Bytes of(int64_t count);
  static constexpr Bytes zero() { return Bytes(0); }
  // Decimal (1e3^k) and binary (2^10k) multiples; round to the nearest byte.
  static Bytes kilobytes(double n);
  static Bytes megabytes(double n);
  static Bytes gigabytes(double n);
  static Bytes kibibytes(double n);
  static Bytes mebibytes(double n);
  static Bytes gibibytes(double n);

  constexpr int64_t count() const { return count_; }
  double to_gib() const { return static_cast<double>(count_) / 1073741824.0; }
  double to_gb() const { return static_cast<double>(count_) * 1e-9; }

  Bytes operator+(Bytes other) const { return Bytes(checked_add(count_, other.count_, "byte sum")); }
  // Throws InputError when the result would be negative.
  Bytes operator-(Bytes other) const;
  Bytes& operator+=(Bytes other) { return *this = *this + other; }
  Bytes operator*(int64_t factor) const;
  // Integer division rounding up: the size of one of `parts` equal pieces that cover the whole.
  Bytes divided_ceil(int64_t parts) const;
  // Scales by a real non-negative factor, rounding to the nearest byte.
  Bytes scaled(double factor) const;
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  constexpr explicit Bytes(int64_t count) : count_(count) {}
  int64_t count_ = 0;
};

// A data rate in bytes per second (finite and > 0 once validated by a parser or a spec).
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth gigabytes_per_s(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth gibibytes_per_s(double v) { return Bandwidth(v * 1073741824.0); }
  // Bits per second as NIC and link speeds are quoted: 400 Gb/s = 50 GB/s.
  static constexpr Bandwidth gigabits_per_s(double v) { return Bandwidth(v * 1e9 / 8.0); }

  constexpr double bytes_per_second() const { return bytes_per_s_; }
  constexpr double gigabytes_per_second() const { return bytes_per_s_ * 1e-9; }
  constexpr bool is_positive() const { return bytes_per_s_ > 0; }

  constexpr Bandwidth operator*(double factor) const { return Bandwidth(bytes_per_s_ * factor); }
  constexpr Bandwidth operator/(double divisor) const { return Bandwidth(bytes_per_s_ / divisor); }
  constexpr Bandwidth operator+(Bandwidth other) const { return Bandwidth(bytes_per_s_ + other.bytes_per_s_); }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(double v) : bytes_per_s_(v) {}
  double bytes_per_s_ = 0;
};

// A compute rate in floating-point operations per second (multiply-add = 2 FLOPs).
class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate flop_per_s(double v) { return FlopRate(v); }
  static constexpr FlopRate teraflop_per_s(double v) { return FlopRate(v * 1e12); }

  constexpr double flop_per_second() const { return flop_per_s_; }
  constexpr double teraflop_per_second() const { return flop_per_s_ * 1e-12; }
  constexpr FlopRate operator*(double factor) const { return FlopRate(flop_per_s_ * factor); }
  constexpr auto operator<=>(const FlopRate&) const = default;

 private:
  constexpr explicit FlopRate(double v) : flop_per_s_(v) {}
  double flop_per_s_ = 0;
};

// Electrical power in watts (board power of a GPU, a node's overhead, a switch).
class Power {
 public:
  constexpr Power() = default;
  static constexpr Power watts(double w) { return Power(w); }
  static constexpr Power zero() { return Power(0); }

  constexpr double in_watts() const { return watts_; }
  constexpr Power operator*(double factor) const { return Power(watts_ * factor); }
  constexpr Power operator+(Power o) const { return Power(watts_ + o.watts_); }
  constexpr Power operator-(Power o) const { return Power(watts_ - o.watts_); }
  constexpr auto operator<=>(const Power&) const = default;

 private:
  constexpr explicit Power(double w) : watts_(w) {}
  double watts_ = 0;
};

// The one conversion of data over a rate into time: ceil(bytes / bandwidth) in picoseconds.
// Throws InternalError if the bandwidth is not positive.
Duration transfer_time(Bytes size, Bandwidth bandwidth);
// bytes / bandwidth in picoseconds before transfer_time rounds it up: comparing these orders
// transfers as their transfer_time does. Throws InternalError if the bandwidth is not positive.
long double transfer_picoseconds(Bytes size, Bandwidth bandwidth);

// ceil(flops / rate) in picoseconds. `flops` is a real count (a step of a large model exceeds
// int64). Throws InternalError if the rate is not positive or flops is negative.
Duration compute_time(double flops, FlopRate rate);

// The rate that moves `size` in `time`: size / time. Throws InternalError if time is not positive.
Bandwidth rate_of(Bytes size, Duration time);

// Parsers for unit strings as written in scenario files. A number, optional spaces, a unit:
//   durations  "1.5 us", "30 ns", "2 ms", "1 s", "800 ps" (also "µs")
//   sizes      "80 GiB", "1.5 GB", "512 MiB", "4096 B", "64 KiB", "2 TB"
//   bandwidths "400 Gb/s", "450 GB/s", "25 GiB/s", "100 Mb/s", "1.2 TB/s"
//   FLOP rates "989 TFLOP/s", "19.5 TFLOP/s", "2 PFLOP/s", "500 GFLOP/s"
//   powers     "700 W", "1.2 kW", "123.3 W", "0 W"
// A bare number, an unknown unit, a negative value or NaN/inf throws InputError whose message names
// the string and lists the valid units. Sizes and bandwidths must be >= 0; bandwidth and FLOP rates
// must be > 0.
Duration parse_duration(std::string_view text);
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
Power parse_power(std::string_view text);  // >= 0

// A whole number as scenario files and flags write it: digits ("500000000", "-3") or an integral
// value in decimal or exponent notation ("4096.0", "5e8", "2.5e9", "1E6") up to 2^53 in magnitude,
// where a double holds every integer exactly. Returns false, leaving `value` unspecified, for
// anything else ("1.5", "5e-1", "1e300", "", "12abc").
bool parse_whole_number(std::string_view text, int64_t& value);

// Human-readable forms for reports and error messages ("1.50 us", "80.0 GiB", "450 GB/s").
std::string to_string(Duration d);
std::string to_string(Bytes b);
std::string to_string(Bandwidth bw);
std::string to_string(FlopRate rate);
std::string to_string(Power power);

}  // namespace clustersim
