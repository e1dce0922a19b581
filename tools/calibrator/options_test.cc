#include "tools/calibrator/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace clustersim::calibrate {
namespace options_test {

CalibrateOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "clustersim-calibrate");
  return parse_options(static_cast<int>(args.size()), args.data());
}

template <typename F>
void expect_input_error(F body, std::initializer_list<std::string> parts) {
  try {
    body();
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Options, SizesUseBinarySuffixesLikeNcclTests) {
  EXPECT_EQ(parse_size("8", "-b"), 8);
  EXPECT_EQ(parse_size("64K", "-b"), 64 * 1024);
  EXPECT_EQ(parse_size("1M", "-b"), 1 << 20);
  EXPECT_EQ(parse_size("8G", "-b"), int64_t{8} << 30);
  expect_input_error([] { parse_size("8T", "--nccl-max"); }, {"--nccl-max", "'8T'", "K, M or G"});
  expect_input_error([] { parse_size("0", "--nccl-max"); }, {"'0'"});
  expect_input_error([] { parse_size("G", "--nccl-max"); }, {"'G'"});
  expect_input_error([] { parse_size("99999999999G", "--nccl-max"); }, {"99999999999G"});
}

TEST(Options, DefaultsAndModes) {
  const auto all = parse({"all"});
  EXPECT_EQ(all.mode, Mode::kAll);
  EXPECT_EQ(all.dtypes.size(), 5u);
  EXPECT_EQ(all.collectives.size(), 6u);
  EXPECT_EQ(all.nccl_max_bytes, int64_t{8} << 30);
  EXPECT_EQ(all.memory_max_bytes, int64_t{4} << 30);
  const auto gemm = parse({"gemm", "--shapes", "s.txt", "--out", "g.csv", "--dtypes", "bf16,fp8"});
  EXPECT_EQ(gemm.mode, Mode::kGemm);
  EXPECT_EQ(gemm.shapes_file, "s.txt");
  EXPECT_EQ(gemm.out, "g.csv");
  EXPECT_EQ(gemm.dtypes, (std::vector<DataType>{DataType::kBf16, DataType::kFp8}));
  EXPECT_TRUE(parse({"--help"}).help);
}

TEST(Options, QuickThenOverride) {
  const auto quick = parse({"all", "--quick"});
  EXPECT_EQ(quick.max_square, 8192);
  EXPECT_FALSE(quick.grid_shapes);
  EXPECT_EQ(quick.nccl_max_bytes, int64_t{64} << 20);
  const auto overridden = parse({"all", "--quick", "--nccl-max", "1G"});
  EXPECT_EQ(overridden.nccl_max_bytes, int64_t{1} << 30);
}

TEST(Options, RejectsBadInputNamingTheOption) {
  expect_input_error([] { parse({}); }, {"no mode", "info, gemm, memory, launch, nccl, all"});
  expect_input_error([] { parse({"bench"}); }, {"'bench'", "info, gemm"});
  expect_input_error([] { parse({"all", "--frobnicate"}); }, {"--frobnicate"});
  expect_input_error([] { parse({"all", "--out"}); }, {"--out", "needs a value"});
  expect_input_error([] { parse({"all", "--dtypes", "bf16,int8"}); }, {"--dtypes", "int8"});
  expect_input_error([] { parse({"all", "--collectives", "allreduce"}); }, {"allreduce", "all_reduce"});
  expect_input_error([] { parse({"all", "--max-square", "3000"}); }, {"--max-square", "3000", "power of two"});
  expect_input_error([] { parse({"all", "--seconds-per-point", "-1"}); }, {"--seconds-per-point", "'-1'"});
  expect_input_error([] { parse({"all", "--device", "x"}); }, {"--device", "'x'"});
  expect_input_error([] { parse({"all", "--nccl-min", "1G", "--nccl-max", "1M"}); }, {"--nccl-min", "--nccl-max"});
  expect_input_error([] { parse({"all", "--memory-max", "64K"}); }, {"--memory-max", "1M"});
  expect_input_error([] { parse({"all", "--min-samples", "80"}); }, {"--min-samples", "80"});
  expect_input_error([] { parse({"gemm", "memory"}); }, {"'memory'"});
}

}  // namespace options_test
}  // namespace clustersim::calibrate
