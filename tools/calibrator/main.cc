// clustersim-calibrate: measures this machine's GPUs for clustersim's cost models.
// Usage and output format: tools/calibrator/README.md, or `clustersim-calibrate --help`.

#include <exception>
#include <iostream>
#include <string>

#include "core/error.h"
#include "tools/calibrator/device_error.h"
#include "tools/calibrator/options.h"
#include "tools/calibrator/process_group.h"
#include "tools/calibrator/run_calibration.h"

int main(int argc, char** argv) {
  using namespace clustersim;
  using namespace clustersim::calibrate;
  std::unique_ptr<ProcessGroup> group;
  auto fail = [&](const char* kind, const std::exception& e, int code) {
    std::cerr << "clustersim-calibrate: " << kind << e.what() << "\n";
    if (group != nullptr && group->size() > 1) group->abort(code);
    return code;
  };
  try {
    group = make_process_group(&argc, &argv);
    std::string command_line;
    for (int i = 0; i < argc; ++i) {
      if (i > 0) command_line += ' ';
      command_line += argv[i];
    }
    const CalibrateOptions options = parse_options(argc, argv);
    if (options.help) {
      if (group->rank() == 0) std::cout << usage();
      return 0;
    }
    return run_calibration(options, *group, command_line);
  } catch (const InputError& e) {
    return fail("error: ", e, 2);
  } catch (const DeviceError& e) {
    return fail("device error: ", e, 1);
  } catch (const InternalError& e) {
    return fail("internal error: ", e, 1);
  } catch (const std::exception& e) {
    return fail("error: ", e, 1);
  }
}
