#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace clustersim {
namespace input_file_test {

// A fresh directory under the test's temporary directory, removed at the end of the test.
class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("clustersim-input-file-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string message_of(const std::string& path, std::size_t limit = kMaxInputFileBytes) {
    try {
      read_input_file(path, "scenario", limit);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFileWholeWithItsBytes) {
  const std::string text = std::string("a: 1\n\xff\0b", 8);
  EXPECT_EQ(read_input_file(write("s.yaml", text), "scenario"), text);
}

TEST_F(InputFileTest, RefusesAMissingFileNamingIt) {
  const auto path = (dir_ / "absent.yaml").string();
  const std::string message = message_of(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
}

TEST_F(InputFileTest, RefusesADirectoryADeviceAndANamedPipeWithoutReading) {
  EXPECT_NE(message_of(dir_.string()).find("is a directory"), std::string::npos);
  // /dev/zero would never end; it must be refused before a byte is read.
  EXPECT_NE(message_of("/dev/zero").find("is a character device"), std::string::npos);
  // A named pipe with no writer would block forever in open() or read().
  const auto fifo = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(message_of(fifo).find("is a named pipe"), std::string::npos);
}

TEST_F(InputFileTest, RefusesAFileAboveTheLimitNamingSizeAndLimit) {
  const auto path = write("big.yaml", std::string(101, 'x'));
  const std::string message = message_of(path, 100);
  EXPECT_NE(message.find("101 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("limit of 100 bytes"), std::string::npos) << message;
  EXPECT_EQ(read_input_file(path, "scenario", 101).size(), 101u);
}

}  // namespace input_file_test
}  // namespace clustersim
