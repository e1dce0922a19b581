#pragma once

// Progress of long work on standard error (clustersim search's phases, a long run's simulation):
// on a terminal a bar with an ETA redrawn in place (at most every 100 ms, from half a second into a
// phase: shorter work draws nothing); otherwise one line every
// kLineInterval once a phase has run that long (logs of batch jobs: short work prints nothing);
// kOff prints nothing. The ETA assumes the rest goes at the rate so far.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

class ProgressBar {
 public:
  enum class Mode { kOff, kBar, kLines };
  static constexpr std::chrono::seconds kLineInterval{5};

  // `command` starts each line ("search: screen 10/20 ..."). `unit` follows the counts ("events");
  // counts of a million or more are shown in millions ("12.3M/45.6M events").
  ProgressBar(std::string command, Mode mode, std::string unit = "")
      : command_(std::move(command)), unit_(std::move(unit)), mode_(mode) {}
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // kBar where standard error is a terminal, else kLines.
  static Mode mode_for_stderr();

  // `done` of `total` in `phase`; a new phase restarts the clock. `done` may pass `total` (an
  // estimate that fell short): the bar is then full and the ETA unknown.
  void update(std::string_view phase, uint64_t done, uint64_t total);
  // Ends a drawn bar's line.
  void finish();

 private:
  std::string command_;
  std::string unit_;
  Mode mode_;
  bool drawn_ = false;
  std::string phase_;
  std::chrono::steady_clock::time_point start_{};
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace clustersim
