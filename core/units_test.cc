#include "core/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace clustersim {
namespace units_test {

// Whole numbers in digits or in exponent notation with an integral value up to 2^53.
TEST(Units, ParsesWholeNumbersInDigitsOrExponentNotation) {
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"0", 0}, {"-3", -3}, {"500000000", 500'000'000}, {"5e8", 500'000'000}, {"2.5e9", 2'500'000'000},
      {"1E6", 1'000'000}, {"9007199254740992", 9'007'199'254'740'992}, {"9223372036854775807", INT64_MAX},
      {"9.007199254740992e15", 9'007'199'254'740'992}, {"4096.0", 4096}, {"-2.0", -2}};
  for (const auto& [text, want] : good) {
    int64_t v = 0;
    EXPECT_TRUE(parse_whole_number(text, v)) << text;
    EXPECT_EQ(v, want) << text;
  }
  // Fractions, values a double cannot hold exactly, overflow, text and the empty string.
  for (const char* bad : {"1.5", "1.5e0", "5e-1", "1e16", "1e300", "9223372036854775808", "", "12abc", "e5", "nan",
                          "inf", " 5"}) {
    int64_t v = 0;
    EXPECT_FALSE(parse_whole_number(bad, v)) << bad;
  }
}

TEST(Units, ParsesDurations) {
  EXPECT_EQ(parse_duration("1.5 us").ps(), 1'500'000);
  EXPECT_EQ(parse_duration("30ns").ps(), 30'000);
  EXPECT_EQ(parse_duration(" 2 ms ").ps(), 2'000'000'000);
  EXPECT_EQ(parse_duration("800 ps").ps(), 800);
  EXPECT_EQ(parse_duration("1 s"), Duration::seconds(1));
}

TEST(Units, ParsesSizesWithDecimalAndBinaryPrefixes) {
  EXPECT_EQ(parse_bytes("80 GiB").count(), 80LL << 30);
  EXPECT_EQ(parse_bytes("80 GB").count(), 80'000'000'000LL);
  EXPECT_EQ(parse_bytes("512 MiB").count(), 512LL << 20);
  EXPECT_EQ(parse_bytes("4096 B").count(), 4096);
  EXPECT_EQ(parse_bytes("1.5 KB").count(), 1500);
}

TEST(Units, ParsesBandwidthBitsAndBytes) {
  // 400 Gb/s is 400e9 bits/s = 50e9 bytes/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450 GB/s").bytes_per_second(), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1 GiB/s").bytes_per_second(), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_flop_rate("989 TFLOP/s").flop_per_second(), 989e12);
}

TEST(Units, RejectsBareNumbersUnknownUnitsAndNonPositiveRates) {
  EXPECT_THROW(parse_duration("1.5"), InputError);
  EXPECT_THROW(parse_bytes("80 gib"), InputError);
  EXPECT_THROW(parse_bandwidth("400 Gbps"), InputError);
  EXPECT_THROW(parse_bandwidth("0 GB/s"), InputError);
  EXPECT_THROW(parse_bandwidth("-3 GB/s"), InputError);
  EXPECT_THROW(parse_bytes("-1 B"), InputError);
  EXPECT_THROW(parse_duration(""), InputError);
  EXPECT_THROW(parse_duration("us"), InputError);
  EXPECT_THROW(parse_flop_rate("inf TFLOP/s"), InputError);
  EXPECT_THROW(parse_flop_rate("nan TFLOP/s"), InputError);
}

TEST(Units, ParsesPowerAndRejectsNegativeOrNonFinite) {
  EXPECT_DOUBLE_EQ(parse_power("700 W").in_watts(), 700.0);
  EXPECT_DOUBLE_EQ(parse_power("1.2 kW").in_watts(), 1200.0);
  EXPECT_DOUBLE_EQ(parse_power("0 W").in_watts(), 0.0);
  EXPECT_THROW(parse_power("700"), InputError);
  EXPECT_THROW(parse_power("-5 W"), InputError);
  EXPECT_THROW(parse_power("inf W"), InputError);
  EXPECT_THROW(parse_power("nan W"), InputError);
  EXPECT_THROW(parse_power("700 w"), InputError);
}

TEST(Units, ErrorMessageNamesValueAndValidUnits) {
  try {
    parse_bandwidth("400 Gbps");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("400 Gbps"), std::string::npos);
    EXPECT_NE(msg.find("Gb/s"), std::string::npos);
    EXPECT_NE(msg.find("GB/s"), std::string::npos);
  }
}

TEST(Units, TransferTimeRoundsUp) {
  // 1 byte at 3 bytes/s = 333333333333.33 ps -> rounds up to ...334.
  EXPECT_EQ(transfer_time(Bytes::of(1), Bandwidth::bytes_per_s(3)).ps(), 333'333'333'334);
  // 1 GB at 100 GB/s is exactly 10 ms.
  EXPECT_EQ(transfer_time(Bytes::gigabytes(1), Bandwidth::gigabytes_per_s(100)), Duration::milliseconds(10));
  EXPECT_EQ(transfer_time(Bytes::zero(), Bandwidth::gigabytes_per_s(1)), Duration::zero());
  EXPECT_THROW(transfer_time(Bytes::of(1), Bandwidth()), InternalError);
}

// transfer_time's double fast path rounds as ceil(transfer_picoseconds) does, over sizes from a
// byte to terabytes and rates from kB/s to PB/s, exact quotients (1 GB at 100 GB/s) included.
TEST(Units, TransferTimeEqualsTheCeilingOfTheLongDoubleQuotient) {
  std::mt19937_64 random(20261203);
  std::uniform_real_distribution<double> log_size(0.0, 13.0);
  std::uniform_real_distribution<double> log_rate(3.0, 15.0);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const Bytes size = Bytes::of(static_cast<int64_t>(std::pow(10.0, log_size(random))));
    // Every fourth rate a round number, whose quotients are often whole picoseconds.
    const double rate = i % 4 == 0 ? std::round(std::pow(10.0, log_rate(random)) / 1e6) * 1e6 + 1e6
                                   : std::pow(10.0, log_rate(random));
    const long double exact = transfer_picoseconds(size, Bandwidth::bytes_per_s(rate));
    if (!(exact < 9.2e18L)) continue;
    EXPECT_EQ(transfer_time(size, Bandwidth::bytes_per_s(rate)).ps(), static_cast<int64_t>(std::ceil(exact)))
        << size.count() << " B at " << rate << " B/s";
    ++checked;
  }
  EXPECT_GT(checked, 150000);
  for (int gb = 1; gb <= 1000; ++gb) {  // whole quotients: gb GB at 100 GB/s is gb x 10 ms
    EXPECT_EQ(transfer_time(Bytes::gigabytes(gb), Bandwidth::gigabytes_per_s(100)), Duration::milliseconds(10) * gb);
  }
}

TEST(Units, ComputeTimeRoundsUp) {
  // 989e12 FLOP at 989 TFLOP/s is one second.
  EXPECT_EQ(compute_time(989e12, FlopRate::teraflop_per_s(989)), Duration::seconds(1));
  EXPECT_EQ(compute_time(1, FlopRate::flop_per_s(3)).ps(), 333'333'333'334);
}

TEST(Units, OverflowIsChecked) {
  EXPECT_THROW(Duration::max() + Duration::picoseconds(1), OverflowError);
  EXPECT_THROW(Duration::seconds(1e8), OverflowError);  // 1e20 ps > 9.2e18
  EXPECT_THROW(Bytes::of(INT64_MAX) + Bytes::of(1), OverflowError);
  EXPECT_THROW(Bytes::of(1LL << 62) * 4, OverflowError);
  EXPECT_THROW(parse_bytes("1e30 B"), OverflowError);
  EXPECT_THROW(transfer_time(Bytes::of(INT64_MAX), Bandwidth::bytes_per_s(1)), OverflowError);
}

TEST(Units, LargeValuesStayExact) {
  // Case C5: 3,000,000,000 ns and 9,839,837,184 bytes are held without 32-bit wrap-around.
  EXPECT_EQ(Duration::nanoseconds(3'000'000'000.0).ps(), 3'000'000'000'000LL /* 3e9 ns = 3e12 ps */);
  EXPECT_EQ(parse_bytes("9839837184 B").count(), 9'839'837'184LL);
  EXPECT_EQ(parse_duration("3000000000 ns").ps(), 3'000'000'000'000LL /* 3e9 ns = 3e12 ps */);
  EXPECT_EQ(Bytes::of(9'839'837'184LL).divided_ceil(4).count(), 2'459'959'296LL);
}

TEST(Units, TimeArithmetic) {
  const Time t = Time::zero() + Duration::microseconds(2);
  EXPECT_EQ(t - Time::zero(), Duration::microseconds(2));
  EXPECT_LT(Time::zero(), t);
  EXPECT_EQ(Duration::microseconds(1).scaled(0.5), Duration::nanoseconds(500));
}

TEST(Units, BytesNeverNegative) {
  EXPECT_THROW(Bytes::of(1) - Bytes::of(2), InputError);
  EXPECT_THROW(Bytes::of(-1), InputError);
  EXPECT_EQ(Bytes::of(10).divided_ceil(3).count(), 4);
}

}  // namespace units_test
}  // namespace clustersim
