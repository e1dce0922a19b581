#include "tools/cli/html_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clustersim {
namespace html_report_test {

TraceSpan span(int rank, const std::string& stream, const std::string& name, int64_t start_ps, int64_t end_ps) {
  return TraceSpan{rank, rank, stream, name, Time::from_ps(start_ps), Time::from_ps(end_ps)};
}

// Spans of one row at most the resolution apart are one rect from the first's start to the latest
// end; a larger gap opens a new rect. Rows: rank order, then the Chrome trace's stream order, and
// one row per kind of wait.
TEST(HtmlReport, TimelineRowsMergeSpansCloserThanTheResolution) {
  const Duration resolution = Duration::picoseconds(10);
  const std::vector<TraceSpan> spans{
      span(1, "compute", "c", 0, 5),      span(0, "tp", "a", 100, 200),       span(0, "compute", "fc2", 30, 40),
      span(0, "compute", "fc1", 0, 20),   span(0, "compute", "fc3", 51, 60),  span(0, "wait", "bubble", 20, 30),
      span(0, "wait", "host_bound", 40, 51), span(0, "compute", "long", 1, 25)};
  const std::vector<TimelineRow> rows = timeline_rows(spans, resolution);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_EQ(rows[0].stream, "compute");
  // fc1 [0, 20] and long [1, 25] overlap, fc2 starts 5 after 25: one rect; fc3 starts 11 after 40.
  ASSERT_EQ(rows[0].rects.size(), 2u);
  EXPECT_EQ(rows[0].rects[0].start, Time::from_ps(0));
  EXPECT_EQ(rows[0].rects[0].end, Time::from_ps(40));
  EXPECT_EQ(rows[0].rects[0].spans, 3);
  EXPECT_EQ(rows[0].rects[0].first_name, "fc1");
  EXPECT_EQ(rows[0].rects[1].first_name, "fc3");
  EXPECT_EQ(rows[1].stream, "tp");
  EXPECT_EQ(rows[2].stream, "wait");
  EXPECT_EQ(rows[2].rects.front().first_name, "bubble");
  EXPECT_EQ(rows[3].rects.front().first_name, "host_bound");
  EXPECT_EQ(rows[4].rank, 1);
  // At a zero resolution only touching or overlapping spans merge.
  EXPECT_EQ(timeline_rows(spans, Duration::zero())[0].rects.size(), 3u);
}

SearchResult search_of(const std::vector<std::pair<int64_t, double>>& peak_and_tokens) {
  SearchResult r;
  for (const auto& [peak, tokens] : peak_and_tokens) {
    r.candidates.emplace_back();
    CandidateOutcome o;
    o.metrics.peak_bytes = peak;
    o.metrics.tokens_per_s = tokens;
    r.outcomes.push_back(o);
  }
  return r;
}

// The front keeps a candidate unless another has at least its tokens/s at no more memory; of two
// equal points the first; rejected candidates are not points.
TEST(HtmlReport, ParetoFrontKeepsTheUndominatedCandidates) {
  SearchResult r = search_of({{10, 100}, {20, 300}, {15, 90}, {20, 250}, {30, 300}, {5, 50}, {40, 400}, {5, 50}, {1, 1000}});
  r.outcomes[8].rejected = RejectReason::kOutOfMemory;
  EXPECT_EQ(pareto_front(r), (std::vector<size_t>{5, 0, 1, 6}));
}

TEST(HtmlReport, EscapesTextAndAttributes) {
  EXPECT_EQ(html_escape("<script>a & \"b\" 'c'</script>"),
            "&lt;script&gt;a &amp; &quot;b&quot; &#39;c&#39;&lt;/script&gt;");
}

}  // namespace html_report_test
}  // namespace clustersim
