#pragma once

// The page of `clustersim report`: one self-contained HTML file (no fetch, no library) with its
// charts as inline SVG written here, and a short inline script for zooming the timeline.
//
// A step (write_run_html):
//   - the timeline of the simulated ranks: one row per rank and stream of the Chrome trace
//     (compute, host, tp, cp, ep, etp, dp, edp, pp, emb), the compute stream's waits
//     (StepResult::waits: pipeline bubble, exposed communication, host-bound) drawn on its row.
//     Spans of one row closer than the timeline resolution (the step time / kTimelineBins) are
//     drawn as one rect, so that the page of a 16,384-GPU step stays small (timeline_rows());
//   - the time breakdown of every simulated rank, stacked, the critical rank marked;
//   - the memory of each stage's rank by part (MemoryBreakdown), stacked against the GPU capacity;
//   - the energy and campaign figures where the run has them;
//   - the scenario file as read and the command line that made the page.
// A search (write_search_html): every simulated candidate as a point (tokens/s against peak
// memory, screening figures), the Pareto front, the winner, the best layouts, the rejected counts
// by reason; then the scenario and the command line.
//
// Elements the browser test counts (tests/report_browser_test.py): the rects of the timeline (the
// <rect>s, or the subpaths of the <path>, of each `g.spans` row of trace spans and `g.waits` row),
// `g.rank-breakdown` and `g.stage-memory` with their `rect.part`s, `circle.candidate`,
// `circle.pareto`, `circle.winner`, `tr.rejected`; `body[data-ok="1"]` once the inline script has
// run without an exception.

#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/collective_command.h"

#include "parallelism/layout_search.h"
#include "parallelism/step_simulation.h"
#include "tools/cli/run_report.h"

namespace clustersim {

// The timeline's resolution: the step time / kTimelineBins. 10,000: the 16,384-GPU Llama-3-405B
// step (16 ranks, 180,202 spans) draws as about 36,000 rects, a page of a few MB; spans closer
// than 1 ms of its 9.8 s step merge, about a pixel at a zoom of 6 on a 1,600-pixel-wide window.
inline constexpr int64_t kTimelineBins = 10'000;

// The most timeline rects drawn as <rect> elements with their first span's name as a tooltip
// (<title>); a larger timeline draws each row as one <path> of a subpath ("M x 0h w v12h-w z") per
// rect, without names: the 16,384-GPU page (about 51,000 rects) is smaller and renders faster.
inline constexpr size_t kTimelineTitledRects = 20'000;

// One rect of the timeline: spans of one row merged (`spans` of them), from the first's start to
// the latest end.
struct TimelineRect {
  Time start;
  Time end;
  int64_t spans = 0;
  std::string first_name;  // the name of its first span
};

// One row of the timeline: the spans of one simulated rank on one stream ("compute", "tp", ...,
// or "wait" for StepResult::waits, merged per kind).
struct TimelineRow {
  int rank = 0;
  std::string stream;
  std::vector<TimelineRect> rects;
};

// Merges `spans` (any order) into rows, one per (rank, stream, and for stream "wait" the name):
// in start order, a span whose start is at most `resolution` after the end of the row's current
// rect joins it, otherwise it opens a new rect. Rows in rank order, then the Chrome trace's stream
// order (compute, tp, cp, ep, etp, dp, edp, pp, host, then others by name). `resolution` >= 0 ps.
std::vector<TimelineRow> timeline_rows(const std::vector<TraceSpan>& spans, Duration resolution);

// The simulated candidates of `result` on the Pareto front of tokens/s (higher) against peak
// memory (lower), screening figures: no other simulated candidate has at least the tokens/s and
// at most the peak with one of them strictly better; of equal points the first in the space.
// Indices into result.candidates, by ascending peak memory.
std::vector<size_t> pareto_front(const SearchResult& result);

// What the page says about how it was made.
struct HtmlReportSource {
  std::string scenario_path;             // as given on the command line
  std::string scenario_text;             // the file's bytes
  std::vector<std::string> sets;         // the --set overrides, in order
  std::string command_line;              // the command that made the page, as a shell line
};

// "<" as "&lt;" and so on: `text` as HTML text or a quoted attribute value.
std::string html_escape(const std::string& text);

// The page of one simulated step. `report.step.trace` and `report.step.waits` fill the timeline
// (a step simulated without record_trace has an empty one, and the page says so). Throws nothing
// but what the stream throws; a failed write shows in `out`'s state (check_written()).
void write_run_html(const TrainingReport& report, const RunContext& context, const HtmlReportSource& source,
                    std::ostream& out);

// The page of a finished search of `scenario` (its search: section); `wall_s` the search's seconds.
void write_search_html(const Scenario& scenario, const SearchResult& result, int top, double wall_s,
                       const HtmlReportSource& source, std::ostream& out);

// The page of `clustersim collective --html`: busbw (nccl-tests' bus bandwidth, GB/s) against size
// (log2 axis), one polyline with a circle per size for each algorithm in `sweeps` that has rows,
// `chosen` (the sweep the table prints: the selector's choice, or the --algo given, named by
// `chosen_label`) as squares on top, a line per
// algorithm that cannot run the op with its reason, the table of `chosen` and the command.
void write_collective_html(const std::string& title, const CollectiveSweep& chosen, const std::string& chosen_label,
                           const std::vector<AlgorithmSweep>& sweeps, const std::string& command_line,
                           std::ostream& out);

}  // namespace clustersim
