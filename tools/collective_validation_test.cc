#include "tools/collective_validation.h"

#include <gtest/gtest.h>

#include <sstream>

#include "scenarios/hardware_presets.h"

namespace clustersim {
namespace {

const std::string kCsv = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/collectives.csv";

// Issue 2: for sizes ≥ 64 MiB the median error against the published measurements is ≤ 15 %
// before any calibration.
TEST(CollectiveValidation, MedianErrorOfLargeMessagesIsWithinFifteenPercent) {
  const CollectiveValidation validation = validate_collectives(kCsv, default_data_dir());
  EXPECT_GE(validation.large_rows, 30);
  EXPECT_LE(validation.median_error_large, 0.15);
  int compared = 0;
  for (const auto& row : validation.rows) {
    if (row.compared) {
      ++compared;
      EXPECT_GT(row.simulated, 0) << row.system;
      EXPECT_DOUBLE_EQ(row.error, row.simulated / row.measured - 1.0);
    } else {
      EXPECT_FALSE(row.not_compared.empty()) << row.system << " has neither a comparison nor a reason";
    }
  }
  EXPECT_EQ(compared, validation.compared_rows);
  EXPECT_EQ(validation.rows.size(), 123u);  // every data row of the CSV
}

// The 8 × H200 ring rows: ring busbw is NCCL's usable NVLink bandwidth, 18 × 20.6 GB/s, less the
// latency term; measured 363–368 GB/s.
TEST(CollectiveValidation, RingRowsOnH200) {
  const CollectiveValidation validation = validate_collectives(kCsv, default_data_dir());
  int checked = 0;
  for (const auto& row : validation.rows) {
    if (!row.compared || row.gpus != 8 || row.system.find("H200") == std::string::npos ||
        row.algorithm.find("NVLS_ENABLE=0") == std::string::npos) {
      continue;
    }
    EXPECT_LT(row.simulated, 18 * 20.6);
    EXPECT_GT(row.simulated, 0.99 * 18 * 20.6);
    EXPECT_LT(std::abs(row.error), 0.02) << row.system << " " << row.size_bytes;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(CollectiveValidation, ReportListsEveryRow) {
  const CollectiveValidation validation = validate_collectives(kCsv, default_data_dir());
  std::ostringstream out;
  write_collective_validation(validation, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("Median |error|"), std::string::npos);
  size_t rows = 0;
  for (size_t at = text.find("\n| "); at != std::string::npos; at = text.find("\n| ", at + 1)) ++rows;
  EXPECT_EQ(rows, validation.rows.size() + 1);  // plus the header row
}

}  // namespace
}  // namespace clustersim
