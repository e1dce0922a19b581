#include "tools/calibrator/gemm_shapes.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "core/data_type.h"
#include "core/error.h"

namespace clustersim::calibrate {
namespace gemm_shapes_test {

// Expects `body` to throw InputError whose message contains every string in `parts`.
template <typename F>
void expect_input_error(F body, std::initializer_list<std::string> parts) {
  try {
    body();
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

std::vector<GemmShape> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_gemm_shapes(in, "shapes.txt");
}

TEST(GemmShapes, TypeNamesAreThoseOfCore) {
  for (DataType type : gemm_data_types()) {
    EXPECT_EQ(gemm_data_type_name(type), name_of(type));
    EXPECT_EQ(parse_gemm_data_type(name_of(type), "test"), type);
  }
  EXPECT_EQ(gemm_data_types().size(), 5u);
}

TEST(GemmShapes, ParsesLinesCommentsAndLabels) {
  const auto shapes = parse(
      "# forward GEMMs of one layer\n"
      "4096 12288 4096 bf16 qkv_fwd\n"
      "\n"
      "  4096 4096 4096 fp8   # no label\n"
      "8 16 32 fp32 layer.0/fc1:wgrad+x-y\n");
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].m, 4096);
  EXPECT_EQ(shapes[0].n, 12288);
  EXPECT_EQ(shapes[0].k, 4096);
  EXPECT_EQ(shapes[0].dtype, DataType::kBf16);
  EXPECT_EQ(shapes[0].label, "qkv_fwd");
  EXPECT_EQ(shapes[0].set, "file");
  EXPECT_EQ(shapes[1].dtype, DataType::kFp8);
  EXPECT_EQ(shapes[1].label, "");
  EXPECT_EQ(shapes[2].label, "layer.0/fc1:wgrad+x-y");
  // FLOPs of a GEMM: one multiply-add (2 FLOPs) per (m, n, k) triple.
  EXPECT_DOUBLE_EQ(shapes[2].flops(), 2.0 * 8 * 16 * 32);
}

TEST(GemmShapes, FormatIsTheInverseOfParse) {
  const GemmShape shape{4095, 50257, 4096, DataType::kTf32, "file", "logits"};
  const auto back = parse(format_gemm_shape_line(shape) + "\n");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].m, shape.m);
  EXPECT_EQ(back[0].n, shape.n);
  EXPECT_EQ(back[0].k, shape.k);
  EXPECT_EQ(back[0].dtype, shape.dtype);
  EXPECT_EQ(back[0].label, shape.label);
  EXPECT_EQ(format_gemm_shape_line(GemmShape{1, 2, 3, DataType::kFp16, "", ""}), "1 2 3 fp16");
  expect_input_error([] { format_gemm_shape_line(GemmShape{1, 2, 3, DataType::kFp16, "", "a,b"}); },
                     {"a,b"});
}

TEST(GemmShapes, RejectsBadLinesNamingLineAndField) {
  expect_input_error([] { parse("1 2 3 bf16\n0 2 3 bf16\n"); }, {"shapes.txt:2", "M", "'0'"});
  expect_input_error([] { parse("1 -2 3 bf16\n"); }, {"shapes.txt:1", "N", "'-2'"});
  expect_input_error([] { parse("1 2 x bf16\n"); }, {"K", "'x'"});
  expect_input_error([] { parse("1 2 2097152 bf16\n"); }, {"K", "2097152", "1048576"});
  expect_input_error([] { parse("1 2 3 bfloat16\n"); }, {"shapes.txt:1", "bfloat16", "bf16, fp16, fp8, tf32, fp32"});
  expect_input_error([] { parse("1 2 3\n"); }, {"3 fields", "M N K dtype [label]"});
  expect_input_error([] { parse("1 2 3 bf16 a b\n"); }, {"6 fields"});
  expect_input_error([] { parse("1 2 3 bf16 a;b\n"); }, {"label", "a;b"});
  expect_input_error([] { read_gemm_shapes_file("/nonexistent/shapes.txt"); }, {"/nonexistent/shapes.txt"});
}

TEST(GemmShapes, SquaresArePowersOfTwoForEveryType) {
  const std::vector<DataType> types{DataType::kBf16, DataType::kFp32};
  const auto shapes = square_shapes(types, 256, 16384);
  // log2(16384 / 256) + 1 = 7 sizes per type.
  ASSERT_EQ(shapes.size(), 7u * types.size());
  for (const auto& s : shapes) {
    EXPECT_EQ(s.m, s.n);
    EXPECT_EQ(s.n, s.k);
    EXPECT_EQ(s.m & (s.m - 1), 0);
    EXPECT_EQ(s.set, "square");
  }
  EXPECT_EQ(shapes.front().m, 256);
  EXPECT_EQ(shapes[6].m, 16384);
  expect_input_error([] { square_shapes({DataType::kBf16}, 300, 1024); }, {"300"});
  expect_input_error([] { square_shapes({DataType::kBf16}, 4096, 1024); }, {"4096..1024"});
}

TEST(GemmShapes, MisalignedShapesBreakTileAlignment) {
  const auto shapes = misaligned_shapes({DataType::kBf16});
  EXPECT_EQ(shapes.size(), 9u);
  for (const auto& s : shapes) {
    // Each has a dimension that is not a multiple of 64, so no tile size of 64 or more divides the
    // problem (1000 is a multiple of 8 but not of 64; the others are odd).
    EXPECT_TRUE(s.m % 64 != 0 || s.n % 64 != 0 || s.k % 64 != 0) << s.m << "x" << s.n << "x" << s.k;
    EXPECT_EQ(s.set, "misaligned");
  }
}

TEST(GemmShapes, GridCoversEveryCombination) {
  const auto shapes = grid_shapes(DataType::kBf16);
  ASSERT_EQ(shapes.size(), 27u);  // 3 values of M × 3 of N × 3 of K
  std::set<std::tuple<int64_t, int64_t, int64_t>> distinct;
  for (const auto& s : shapes) distinct.insert({s.m, s.n, s.k});
  EXPECT_EQ(distinct.size(), 27u);
}

}  // namespace gemm_shapes_test
}  // namespace clustersim::calibrate
