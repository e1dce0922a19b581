#pragma once

// The words bad input is reported in, by the CLI and by the Python module alike.

#include <string>

#include "core/error.h"

namespace clustersim {

// What the CLI prints after "error: " for bad input (exit code 2), and the message of the Python
// module's clustersim.InputError: the error's message cut to 1,000 bytes (bounded_message()), and
// for an OverflowError what it means and how to stay inside what clustersim represents.
std::string input_error_message(const InputError& error);

}  // namespace clustersim
