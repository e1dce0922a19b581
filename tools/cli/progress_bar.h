#pragma once

// Progress of long work on standard error (clustersim search's phases, a long run's simulation):
// on a terminal a bar with an ETA redrawn in place (at most every 100 ms, from half a second into a
// phase: shorter work draws nothing); otherwise one line every
// kLineInterval once a phase has run that long (logs of batch jobs: short work prints nothing);
// kOff prints nothing. The ETA assumes the rest goes at the recent rate (RecentRate).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

// The rate of work over its last few seconds: the rate since the start until kWindow has passed,
// then over the last kWindow to 2·kWindow. A flow simulation's first seconds run several times
// slower than the rest (routes are built on first use; measured: about 0.8 M events/s for a
// 16,384-GPU step's first seconds against 3 M/s after), so an ETA from the rate since the start
// reads minutes long at first.
class RecentRate {
 public:
  static constexpr double kWindow = 5.0;  // s
  // Work `done` (cumulative, non-decreasing) at `t` seconds since the start.
  void observe(double t, uint64_t done);
  // Units per second; 0 before any work is done.
  double rate() const;

 private:
  double now_ = 0;
  uint64_t done_ = 0;
  double mark_t_ = 0;          // the current window's start
  uint64_t mark_done_ = 0;
  double previous_t_ = -1;     // the previous window's start (< 0: none yet)
  uint64_t previous_done_ = 0;
};

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
  RecentRate rate_;
};

}  // namespace clustersim
