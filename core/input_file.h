#pragma once

#include <cstddef>
#include <string>

namespace clustersim {

// Largest input file clustersim reads: 16 MiB. The shipped scenarios and presets are a few KB,
// the largest shipped CSV (docs/validation/published/training_runs.csv) about 0.4 MB and the
// largest calibration profile about 1 MB; 16 MiB leaves an order of magnitude above each while
// keeping a file that is not an input (a disk image, /dev/zero) from being read into memory.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{16} << 20;

// Reads the regular file `path` whole, as bytes, and returns it.
// `what` names the kind of file in messages ("scenario", "calibration profile", "CSV").
// Refused with InputError before anything is read, each message naming `path` (and its location()
// the file):
//  - a path that does not exist or cannot be opened;
//  - anything that is not a regular file: a directory, a device (/dev/zero), a named pipe (which
//    would block until a writer appears), a socket;
//  - a file larger than `max_bytes` (the size and the limit are named).
// A file that grows past `max_bytes` while it is read is refused too: reading stops there.
std::string read_input_file(const std::string& path, const std::string& what,
                            std::size_t max_bytes = kMaxInputFileBytes);

}  // namespace clustersim
