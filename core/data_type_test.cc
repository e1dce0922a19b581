#include "core/data_type.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace data_type_test {

TEST(DataType, RoundTripsNamesAndSizes) {
  for (auto t : {DataType::kFp32, DataType::kTf32, DataType::kBf16, DataType::kFp16, DataType::kFp8}) {
    EXPECT_EQ(parse_data_type(name_of(t)), t);
  }
  EXPECT_EQ(bytes_per_element(DataType::kBf16), 2);
  EXPECT_EQ(bytes_per_element(DataType::kFp8), 1);
  EXPECT_EQ(bytes_per_element(DataType::kTf32), 4);
}

TEST(DataType, RejectsUnknownNames) { EXPECT_THROW(parse_data_type("bfloat16"), InputError); }

}  // namespace data_type_test
}  // namespace clustersim
