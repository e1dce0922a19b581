#include "tools/cli/input_error_message.h"

namespace clustersim {

std::string input_error_message(const InputError& error) {
  if (dynamic_cast<const OverflowError*>(&error) != nullptr) {
    // Values each in range can still multiply beyond int64 (a 2^24-token sequence runs for years).
    return bounded_message(error.what()) +
           ": a size or time this input leads to is beyond what clustersim represents (int64 bytes, or int64 "
           "picoseconds: about 106 days); use smaller sizes (sequence length, batch, model dimensions, message size)";
  }
  return bounded_message(error.what());
}

}  // namespace clustersim
