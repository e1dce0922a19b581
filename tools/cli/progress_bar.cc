#include "tools/cli/progress_bar.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

namespace clustersim {

namespace {

std::string count_text(uint64_t n) {
  if (n >= 1'000'000) return fmt::format("{:.1f}M", static_cast<double>(n) / 1e6);
  return fmt::format("{}", n);
}

}  // namespace

void RecentRate::observe(double t, uint64_t done) {
  now_ = t;
  done_ = done;
  if (t - mark_t_ >= kWindow) {
    previous_t_ = mark_t_;
    previous_done_ = mark_done_;
    mark_t_ = t;
    mark_done_ = done;
  }
}

double RecentRate::rate() const {
  const double since = previous_t_ >= 0 ? previous_t_ : 0.0;
  const uint64_t base = previous_t_ >= 0 ? previous_done_ : 0;
  if (now_ <= since || done_ <= base) return 0.0;
  return static_cast<double>(done_ - base) / (now_ - since);
}

ProgressBar::Mode ProgressBar::mode_for_stderr() { return isatty(fileno(stderr)) != 0 ? Mode::kBar : Mode::kLines; }

void ProgressBar::update(std::string_view phase, uint64_t done, uint64_t total) {
  if (mode_ == Mode::kOff) return;
  const auto now = std::chrono::steady_clock::now();
  if (phase != phase_) {
    finish();
    phase_ = std::string(phase);
    start_ = now;
    last_ = now;
    rate_ = RecentRate{};
  }
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  rate_.observe(elapsed, done);
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  std::string eta = "--:--";
  if (const double rate = rate_.rate(); done < total && rate > 0) {
    const auto seconds = static_cast<int64_t>(static_cast<double>(total - done) / rate);
    eta = fmt::format("{}:{:02d}", seconds / 60, seconds % 60);
  }
  const std::string counts =
      fmt::format("{}/{}{}{}", count_text(done), count_text(total), unit_.empty() ? "" : " ", unit_);
  if (mode_ == Mode::kLines) {
    if (now - last_ < kLineInterval) return;
    last_ = now;
    std::fputs(fmt::format("{}: {} {} ({:.1f}%), {:.0f} s so far, ETA {}\n", command_, phase_, counts,
                           100 * fraction, elapsed, eta)
                   .c_str(),
               stderr);
    std::fflush(stderr);
    return;
  }
  if (!drawn_ && elapsed < 0.5) return;  // work of under half a second draws no bar
  if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const int width = 30;
  const int filled = static_cast<int>(fraction * width);
  std::fputs(fmt::format("\r{:<7} [{}{}] {} {:5.1f}% ETA {} ", phase_, std::string(filled, '#'),
                         std::string(width - filled, '.'), counts, 100 * fraction, eta)
                 .c_str(),
             stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace clustersim
