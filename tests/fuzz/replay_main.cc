// A main() for the fuzz harnesses where libFuzzer is not available (g++ builds): runs every file
// named on the command line, or found in a directory named there, through the harness once. The
// committed corpora (reproducers of past findings and the shipped files) then run as plain tests.
// A libFuzzer flag (-runs=..., a leading '-') or a path that does not exist exits 2 with a message:
// this program cannot fuzz, and a mistyped corpus path must not pass as "nothing to replay".

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (!p.empty() && p.string().front() == '-') {
      std::fprintf(stderr,
                   "%s: %s: this is a replay build of the harness (g++, no libFuzzer), which takes only files and "
                   "folders to run once; fuzzing needs the clang build (-DCLUSTERSIM_FUZZ=ON, build-asan/fuzz/)\n",
                   argv[0], argv[i]);
      return 2;
    }
    std::error_code error;
    if (!std::filesystem::exists(p, error)) {
      std::fprintf(stderr, "%s: %s: no such file or folder\n", argv[0], argv[i]);
      return 2;
    }
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(p);
    }
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return files.empty() ? 1 : 0;
}
