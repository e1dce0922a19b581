#include "tools/cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "campaign/campaign.h"

namespace clustersim {

namespace {

// The Chrome trace's stream order (chrome_trace.cc), then the rest by name.
int stream_order(const std::string& stream) {
  static const std::map<std::string, int> kOrder{{"compute", 0}, {"tp", 1},  {"cp", 2}, {"ep", 3},   {"etp", 4},
                                                 {"dp", 5},      {"edp", 6}, {"pp", 7}, {"host", 8}, {"wait", 9}};
  const auto it = kOrder.find(stream);
  return it == kOrder.end() ? 10 : it->second;
}

// A number for an SVG coordinate: three decimals, trailing zeros dropped ("12.5", "0").
std::string num(double x) {
  std::string s = fmt::format("{:.3f}", x);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// Seconds for people: "9.79 s", "12.3 ms", "45.6 us", "0".
std::string seconds_text(double s) {
  if (s == 0) return "0";
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

// Memory as the text report gives it: GB = 1e9 bytes (run_report.cc).
std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes * 1e-9); }

// Round tick steps (1, 2, 5 × 10^k) from 0 to at least `max`, about six of them.
std::vector<double> ticks(double max) {
  if (!(max > 0)) return {0, 1};
  const double raw = max / 6;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    step = f * power;
    if (step >= raw) break;
  }
  std::vector<double> t;
  for (int i = 0; i * step < max + step * 0.999; ++i) t.push_back(i * step);
  return t;
}

// The colour of a stream, a wait or a memory part (Tableau 10).
const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd}
table.figures td,table.figures th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
table.figures th{font-weight:600;white-space:nowrap}
table.list{border-collapse:collapse}table.list td,table.list th{border-bottom:1px solid #eee;padding:2px 8px;text-align:right}
table.list td.l,table.list th.l{text-align:left}
pre{background:#f6f6f6;padding:.8em;overflow:auto;max-height:40em;font-size:12px}
svg text{font-size:11px;fill:#333}.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
.tl-wrap{display:flex}.tl-labels{flex:none}.tl-main{flex:1;min-width:0;position:relative}
#timeline{display:block;width:100%;background:#fafafa;cursor:grab}
#timeline-axis{position:relative;height:16px;font-size:11px;color:#555}
#timeline-axis span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.controls button{margin-right:6px}.note{color:#666;font-size:12px}
.s-compute{fill:#4e79a7}.s-tp{fill:#f28e2b}.s-cp{fill:#edc948}.s-ep{fill:#b07aa1}.s-etp{fill:#ff9da7}
.s-dp{fill:#59a14f}.s-edp{fill:#8cd17d}.s-pp{fill:#e15759}.s-host{fill:#bab0ac}.s-emb{fill:#9c755f}.s-other{fill:#79706e}
.w-bubble{fill:#d7d7d7}.w-exposed_comm{fill:#ff6b6b}.w-host_bound{fill:#f1ce63}.w-idle{fill:#f0f0f0}
.p-compute{fill:#4e79a7}.p-exposed_comm{fill:#ff6b6b}.p-bubble{fill:#d7d7d7}.p-optimizer{fill:#76b7b2}
.p-host_bound{fill:#f1ce63}.p-idle{fill:#f0f0f0}.p-other{fill:#79706e}
.m-params{fill:#4e79a7}.m-param_copies{fill:#a0cbe8}.m-grads{fill:#f28e2b}.m-optimizer_state{fill:#59a14f}
.m-activations{fill:#e15759}.m-logits{fill:#b07aa1}.m-comm_buffers{fill:#edc948}.m-runtime_overhead{fill:#bab0ac}
circle.candidate{fill:#4e79a7;fill-opacity:.45}circle.pareto{fill:#e15759;fill-opacity:1}
circle.winner{fill:none;stroke:#222;stroke-width:2}polyline.pareto{fill:none;stroke:#e15759;stroke-width:1.5}
polyline.algo{fill:none;stroke-width:1.8}rect.chosen{fill:#222}
.a-ring{stroke:#4e79a7;fill:#4e79a7}.a-tree{stroke:#f28e2b;fill:#f28e2b}.a-nvls{stroke:#59a14f;fill:#59a14f}
.a-hierarchical{stroke:#b07aa1;fill:#b07aa1}.a-pairwise{stroke:#e15759;fill:#e15759}.a-other{stroke:#79706e;fill:#79706e}
span.a-ring i{background:#4e79a7}span.a-tree i{background:#f28e2b}span.a-nvls i{background:#59a14f}
span.a-hierarchical i{background:#b07aa1}span.a-pairwise i{background:#e15759}
line.capacity{stroke:#c00;stroke-width:1.5;stroke-dasharray:5 3}line.grid{stroke:#e5e5e5}
)";

// Zoom and pan of the timeline: the SVG's viewBox narrows to [x0, x0 + w] of its 1,000 units;
// the axis labels follow. Sets body[data-ok] = 1 when it ran without an exception.
const char* kScript = R"(
(function(){
try{
  var svg=document.getElementById('timeline');
  if(svg){
    var W=1000,H=+svg.getAttribute('data-height'),step=+svg.getAttribute('data-step-s'),x0=0,w=W;
    var axis=document.getElementById('timeline-axis'),shown=document.getElementById('timeline-shown');
    var fmt=function(s){return s===0?'0':s>=1?s.toFixed(3)+' s':s>=1e-3?(s*1e3).toFixed(3)+' ms':(s*1e6).toFixed(2)+' us';};
    var draw=function(){
      svg.setAttribute('viewBox',x0+' 0 '+w+' '+H);
      var h='';for(var i=0;i<=10;i++){h+='<span style="left:'+(i*10)+'%">'+fmt((x0+w*i/10)/W*step)+'</span>';}
      axis.innerHTML=h;shown.textContent=fmt(x0/W*step)+' to '+fmt((x0+w)/W*step)+' (zoom '+(W/w).toFixed(1)+'x)';
    };
    var zoom=function(f,cx){var n=Math.min(W,Math.max(W/1000,w/f));x0=cx-(cx-x0)*n/w;w=n;x0=Math.max(0,Math.min(W-w,x0));draw();};
    var at=function(e){var r=svg.getBoundingClientRect();return x0+(e.clientX-r.left)/r.width*w;};
    svg.addEventListener('wheel',function(e){if(!e.ctrlKey&&!e.shiftKey)return;e.preventDefault();zoom(e.deltaY<0?1.25:0.8,at(e));},{passive:false});
    var drag=null;
    svg.addEventListener('mousedown',function(e){drag={x:e.clientX,x0:x0};});
    window.addEventListener('mouseup',function(){drag=null;});
    window.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect();
      x0=Math.max(0,Math.min(W-w,drag.x0-(e.clientX-drag.x)/r.width*w));draw();});
    var hover=document.getElementById('timeline-hover');
    svg.addEventListener('mousemove',function(e){var t=e.target;if(t.tagName!=='rect'&&t.tagName!=='path')return;var g=t.parentNode;
      var row='rank '+g.getAttribute('data-rank')+' '+g.getAttribute('data-stream')+(g.classList.contains('waits')?' '+g.classList[1].slice(2):'')+': ';
      if(t.tagName==='path'){hover.textContent=row+'at '+fmt(at(e)/W*step);return;}
      var a=+t.getAttribute('x'),b=a+(+t.getAttribute('width'));var name=t.firstChild?t.firstChild.textContent+', ':'';
      hover.textContent=row+name+fmt(a/W*step)+' to '+fmt(b/W*step)+' ('+fmt((b-a)/W*step)+')';});
    document.getElementById('zoom-in').onclick=function(){zoom(2,x0+w/2);};
    document.getElementById('zoom-out').onclick=function(){zoom(0.5,x0+w/2);};
    document.getElementById('zoom-reset').onclick=function(){x0=0;w=W;draw();};
    draw();
  }
  document.body.setAttribute('data-ok','1');
}catch(e){document.body.setAttribute('data-ok','0');document.body.setAttribute('data-error',String(e));console.error(e);}
})();
)";

void write_head(const std::string& title, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(title)
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body data-ok=\"0\">\n";
}

// The command that made the page, the note and the script; closes the page.
void write_command_and_end(const std::string& command_line, std::ostream& out) {
  out << "<h2 id=\"command\">Command</h2>\n<pre id=\"command-line\">" << html_escape(command_line)
      << "</pre>\n<p class=\"note\">Written by clustersim; the charts are SVG in this file, nothing is fetched.</p>\n";
  out << "<script>" << kScript << "</script>\n</body>\n</html>\n";
}

void write_tail(const HtmlReportSource& source, std::ostream& out) {
  out << "<h2 id=\"scenario\">Scenario</h2>\n<p>" << html_escape(source.scenario_path);
  if (!source.sets.empty()) {
    out << ", with";
    for (const std::string& set : source.sets) out << " <code>--set " << html_escape(set) << "</code>";
  }
  out << "</p>\n<pre id=\"scenario-text\">" << html_escape(source.scenario_text) << "</pre>\n";
  write_command_and_end(source.command_line, out);
}

void figure_row(const std::string& name, const std::string& value, std::ostream& out) {
  out << "<tr><th>" << html_escape(name) << "</th><td>" << html_escape(value) << "</td></tr>\n";
}

void legend(const std::vector<std::pair<std::string, std::string>>& items, std::ostream& out) {
  out << "<p class=\"legend\">";
  for (const auto& [css, label] : items) {
    out << "<span><svg width=\"11\" height=\"11\"><rect class=\"" << css
        << "\" width=\"11\" height=\"11\"/></svg> " << html_escape(label) << "</span>";
  }
  out << "</p>\n";
}

std::string stream_class(const std::string& stream) {
  static const std::vector<std::string> kKnown{"compute", "tp", "cp", "ep", "etp", "dp", "edp", "pp", "host", "emb"};
  return std::find(kKnown.begin(), kKnown.end(), stream) != kKnown.end() ? "s-" + stream : "s-other";
}

void write_timeline(const TrainingReport& r, std::ostream& out) {
  out << "<h2 id=\"timeline-section\">Step timeline</h2>\n";
  if (r.step.trace.empty()) {
    out << "<p>No spans were recorded for this step.</p>\n";
    return;
  }
  int64_t end_ps = r.step.step_time.ps();
  for (const TraceSpan& s : r.step.trace) end_ps = std::max(end_ps, s.end.ps());
  for (const TraceSpan& s : r.step.waits) end_ps = std::max(end_ps, s.end.ps());
  end_ps = std::max<int64_t>(end_ps, 1);
  const Duration resolution = Duration::picoseconds(end_ps / kTimelineBins);
  std::vector<TimelineRow> rows = timeline_rows(r.step.trace, resolution);
  const std::vector<TimelineRow> waits = timeline_rows(r.step.waits, resolution);
  std::map<int, int> stage_of;
  for (const RankBreakdown& b : r.step.ranks) stage_of[b.rank] = b.stage;

  // Rows: each rank's streams; its waits on its compute row.
  constexpr int kRowHeight = 12;
  constexpr int kRowGap = 3;
  constexpr int kRankGap = 6;
  std::map<int, int> compute_y;
  std::vector<int> row_y;
  int y = 0;
  int previous_rank = rows.empty() ? 0 : rows.front().rank;
  for (const TimelineRow& row : rows) {
    if (row.rank != previous_rank) y += kRankGap;
    previous_rank = row.rank;
    row_y.push_back(y);
    if (row.stream == "compute") compute_y[row.rank] = y;
    y += kRowHeight + kRowGap;
  }
  const int height = std::max(y, 1);
  size_t span_rects = 0;
  size_t wait_rects = 0;
  for (const TimelineRow& row : rows) span_rects += row.rects.size();
  for (const TimelineRow& row : waits) wait_rects += row.rects.size();

  out << fmt::format(
      "<p>{} spans of {} simulated rank{} ({} rows), drawn as {} rects: spans of one row less than {} apart "
      "(the step / {}) are one rect. The compute row's gaps are filled with its waits ({} rects). Drag to pan, "
      "Ctrl+wheel or the buttons to zoom; hover a rect for its time{}.</p>\n",
      r.step.trace.size(), r.step.ranks.size(), r.step.ranks.size() == 1 ? "" : "s", rows.size(), span_rects,
      seconds_text(resolution.to_seconds()), kTimelineBins, wait_rects,
      span_rects + wait_rects <= kTimelineTitledRects
          ? " and the name of its first span"
          : fmt::format(" (above {} rects each row is one SVG path and span names are left out: `clustersim "
                        "run --trace` has them)",
                        kTimelineTitledRects));
  legend({{"s-compute", "compute"}, {"s-host", "host thread"}, {"s-tp", "tp"}, {"s-cp", "cp"}, {"s-ep", "ep"},
          {"s-etp", "etp"}, {"s-dp", "dp"}, {"s-edp", "edp"}, {"s-pp", "pp send"}, {"s-emb", "embedding grads"},
          {"w-bubble", "waiting: pipeline bubble"}, {"w-exposed_comm", "waiting: exposed communication"},
          {"w-host_bound", "waiting: host"}},
         out);
  out << "<p class=\"controls\"><button id=\"zoom-in\">zoom in</button><button id=\"zoom-out\">zoom out</button>"
         "<button id=\"zoom-reset\">reset</button> <span id=\"timeline-shown\" class=\"note\"></span> <span id=\"timeline-hover\"></span></p>\n";
  out << "<div class=\"tl-wrap\"><svg class=\"tl-labels\" width=\"190\" height=\"" << height << "\">\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TimelineRow& row = rows[i];
    const int stage = stage_of.count(row.rank) > 0 ? stage_of[row.rank] : 0;
    out << "<text x=\"2\" y=\"" << row_y[i] + kRowHeight - 2 << "\">rank " << row.rank << " (stage " << stage << ") "
        << html_escape(row.stream) << "</text>\n";
  }
  out << "</svg>\n<div class=\"tl-main\">\n";
  out << fmt::format(
      "<svg id=\"timeline\" viewBox=\"0 0 1000 {0}\" preserveAspectRatio=\"none\" height=\"{0}\" data-height=\"{0}\" "
      "data-step-s=\"{1}\" data-spans=\"{2}\" data-rects=\"{3}\" data-resolution-ps=\"{4}\" data-end-ps=\"{5}\">\n",
      height, static_cast<double>(end_ps) * 1e-12,
      r.step.trace.size(), span_rects, resolution.ps(), end_ps);
  const double scale = 1000.0 / static_cast<double>(end_ps);
  const bool titled = span_rects + wait_rects <= kTimelineTitledRects;
  const auto write_rects = [&](const TimelineRow& row, int row_top, const std::string& group_class,
                               const std::string& css) {
    out << "<g class=\"" << group_class << ' ' << css << "\" data-rank=\"" << row.rank << "\" data-stream=\""
        << html_escape(row.stream) << "\" transform=\"translate(0," << row_top << ")\">";
    // A large timeline draws each row as one path of a subpath per rect: a DOM node per row, not
    // per rect, renders several times faster.
    if (!titled) out << "<path d=\"";
    for (const TimelineRect& rect : row.rects) {
      const double x = static_cast<double>(rect.start.ps()) * scale;
      const std::string w = num(std::max(static_cast<double>((rect.end - rect.start).ps()) * scale, 0.001));
      if (!titled) {
        out << 'M' << num(x) << " 0h" << w << 'v' << kRowHeight << 'h' << '-' << w << 'z';
        continue;
      }
      out << "<rect x=\"" << num(x) << "\" width=\"" << w << "\" height=\"" << kRowHeight << "\"><title>"
          << html_escape(rect.first_name);
      if (rect.spans > 1) out << " +" << rect.spans - 1;
      out << "</title></rect>";
    }
    if (!titled) out << "\"/>";
    out << "</g>\n";
  };
  for (const TimelineRow& row : waits) {
    const auto it = compute_y.find(row.rank);
    if (it == compute_y.end()) continue;
    write_rects(row, it->second, "waits", "w-" + row.rects.front().first_name);
  }
  for (size_t i = 0; i < rows.size(); ++i) write_rects(rows[i], row_y[i], "spans", stream_class(rows[i].stream));
  out << "</svg>\n<div id=\"timeline-axis\"></div>\n</div></div>\n";
}

struct Part {
  const char* key;
  const char* label;
  double value;
};

// Horizontal stacked bars, one per entry, against `max` (and a capacity line when capacity > 0).
void write_stacked_bars(const std::string& id, const std::vector<std::string>& labels,
                        const std::vector<std::vector<Part>>& bars, const std::vector<std::string>& group_attributes,
                        const std::string& group_class, const std::string& part_prefix, double max, double capacity,
                        const std::string& capacity_label, const std::function<std::string(double)>& value_text,
                        std::ostream& out) {
  constexpr int kLabelWidth = 200;
  constexpr int kPlotWidth = 900;
  constexpr int kBar = 16;
  constexpr int kGap = 5;
  const int height = static_cast<int>(bars.size()) * (kBar + kGap) + 30;
  const double scale = kPlotWidth / std::max(max, 1e-300);
  out << "<svg id=\"" << id << "\" width=\"" << kLabelWidth + kPlotWidth + 20 << "\" height=\"" << height << "\">\n";
  for (double t : ticks(max)) {
    if (t > max) break;
    const double x = kLabelWidth + t * scale;
    out << "<line class=\"grid\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"0\" y2=\"" << height - 20
        << "\"/><text x=\"" << num(x) << "\" y=\"" << height - 6 << "\" text-anchor=\"middle\">"
        << html_escape(value_text(t)) << "</text>\n";
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = static_cast<int>(i) * (kBar + kGap);
    out << "<g class=\"" << group_class << "\" " << group_attributes[i] << ">";
    out << "<text x=\"0\" y=\"" << y + kBar - 4 << "\">" << html_escape(labels[i]) << "</text>";
    double x = kLabelWidth;
    for (const Part& p : bars[i]) {
      if (!(p.value > 0)) continue;
      out << "<rect class=\"part " << part_prefix << p.key << "\" data-part=\"" << p.key << "\" x=\"" << num(x)
          << "\" y=\"" << y << "\" width=\"" << num(p.value * scale) << "\" height=\"" << kBar << "\"><title>"
          << p.label << ' ' << html_escape(value_text(p.value)) << "</title></rect>";
      x += p.value * scale;
    }
    out << "</g>\n";
  }
  if (capacity > 0) {
    const double x = kLabelWidth + capacity * scale;
    out << "<line class=\"capacity\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"0\" y2=\"" << height - 20
        << "\"><title>" << html_escape(capacity_label) << "</title></line>\n";
  }
  out << "</svg>\n";
}

void write_breakdown(const TrainingReport& r, std::ostream& out) {
  out << "<h2 id=\"breakdown\">Where the time went</h2>\n";
  const TimeBreakdown& b = r.breakdown;
  const double step = r.step_time_s;
  const auto pct = [&](double s) { return step > 0 ? fmt::format("{:.1f} %", 100 * s / step) : std::string("-"); };
  out << "<table class=\"list\" id=\"breakdown-table\"><tr><th class=\"l\">critical rank</th><th>s</th><th>share</th></tr>\n";
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, Duration>>{{"compute", b.compute}, {"exposed communication", b.exposed_comm},
                                                     {"pipeline bubble", b.bubble}, {"optimizer", b.optimizer},
                                                     {"host-bound", b.host_bound}, {"other", b.other}}) {
    out << fmt::format("<tr><td class=\"l\">{}</td><td>{:.4f}</td><td>{}</td></tr>\n", name, value.to_seconds(),
                       pct(value.to_seconds()));
  }
  out << "</table>\n<p>Each simulated rank's step, stacked (the critical rank, which finished last, is marked *):</p>\n";
  legend({{"p-compute", "compute"}, {"p-exposed_comm", "exposed communication"}, {"p-bubble", "pipeline bubble"},
          {"p-optimizer", "optimizer"}, {"p-host_bound", "host-bound"}, {"p-idle", "idle (finished before the last)"}},
         out);
  std::vector<std::string> labels, attributes;
  std::vector<std::vector<Part>> bars;
  double max = step;
  for (size_t i = 0; i < r.step.ranks.size(); ++i) {
    const RankBreakdown& k = r.step.ranks[i];
    labels.push_back(fmt::format("rank {} (stage {}){}", k.rank, k.stage, i == r.step.critical ? " *" : ""));
    attributes.push_back(fmt::format("data-rank=\"{}\"", k.rank));
    std::vector<Part> parts{{"compute", "compute", k.compute.to_seconds()},
                            {"exposed_comm", "exposed communication", k.exposed_comm.to_seconds()},
                            {"bubble", "pipeline bubble", k.bubble.to_seconds()},
                            {"optimizer", "optimizer", k.optimizer.to_seconds()},
                            {"host_bound", "host-bound", k.host_bound.to_seconds()},
                            {"idle", "idle", k.idle.to_seconds()}};
    double total = 0;
    for (const Part& p : parts) total += p.value;
    max = std::max(max, total);
    bars.push_back(std::move(parts));
  }
  write_stacked_bars("breakdown-chart", labels, bars, attributes, "rank-breakdown", "p-", max, 0, "",
                     [](double s) { return seconds_text(s); }, out);
}

void write_memory(const TrainingReport& r, std::ostream& out) {
  out << "<h2 id=\"memory\">Memory per stage</h2>\n";
  out << fmt::format("<p>Peak {} on stage {}, against the GPU's {} ({}).</p>\n", gb(static_cast<double>(r.peak_memory.count())),
                     r.peak_stage, gb(static_cast<double>(r.capacity.count())), r.fits ? "fits" : "does not fit");
  legend({{"m-params", "params"}, {"m-param_copies", "param copies"}, {"m-grads", "grads"},
          {"m-optimizer_state", "optimizer state"}, {"m-activations", "activations"}, {"m-logits", "logits"},
          {"m-comm_buffers", "comm buffers"}, {"m-runtime_overhead", "runtime overhead"}},
         out);
  std::vector<std::string> labels, attributes;
  std::vector<std::vector<Part>> bars;
  const double capacity = static_cast<double>(r.capacity.count());
  double max = capacity;
  for (const StageMemory& st : r.programs.memory) {
    const MemoryBreakdown& m = st.memory;
    labels.push_back(fmt::format("stage {} ({} layers)", st.stage, st.layers));
    attributes.push_back(fmt::format("data-stage=\"{}\" data-total-bytes=\"{}\"", st.stage, m.total().count()));
    const auto d = [](Bytes b) { return static_cast<double>(b.count()); };
    bars.push_back({{"params", "params", d(m.params)},
                    {"param_copies", "param copies", d(m.param_copies)},
                    {"grads", "grads", d(m.grads)},
                    {"optimizer_state", "optimizer state", d(m.optimizer_state)},
                    {"activations", "activations", d(m.activations)},
                    {"logits", "logits", d(m.logits)},
                    {"comm_buffers", "comm buffers", d(m.comm_buffers)},
                    {"runtime_overhead", "runtime overhead", d(m.runtime_overhead)}});
    max = std::max(max, d(m.total()));
  }
  write_stacked_bars("memory-chart", labels, bars, attributes, "stage-memory", "m-", max * 1.02, capacity,
                     "GPU capacity " + gb(capacity), [](double b) { return gb(b); }, out);
}

void write_energy_and_campaign(const TrainingReport& r, const RunContext& c, std::ostream& out) {
  const Scenario& s = *c.scenario;
  if (r.energy.modelled) {
    const ClusterEnergy e = cluster_energy(r, *c.cluster, s.pue);
    out << "<h2 id=\"energy\">Energy</h2>\n<table class=\"figures\">\n";
    figure_row("GPU power", fmt::format("{:.1f} W average of a {:.0f} W limit; clock-bound work at {:.3f} of full clock",
                                        r.energy.avg_power_w, r.energy.power_limit_w, r.energy.rate_factor),
               out);
    figure_row("energy per step", fmt::format("{:.1f} J per GPU, {:.1f} kJ cluster (PUE {:.2f}, node overhead {:.1f} kW)",
                                              r.energy.joules_per_step, e.cluster_joules_per_step * 1e-3, e.pue,
                                              e.node_overhead_w * 1e-3),
               out);
    figure_row("energy per token", fmt::format("{:.4g} J", e.joules_per_token), out);
    out << "</table>\n";
  }
  if (c.campaign != nullptr) {
    const CampaignResult& k = *c.campaign;
    constexpr double kDaySeconds = 86400;
    out << "<h2 id=\"campaign\">Campaign</h2>\n<table class=\"figures\">\n";
    figure_row("steps", fmt::format("{}", k.steps), out);
    figure_row("wall clock", fmt::format("{:.2f} days (p10 {:.2f}, p90 {:.2f}; {} seeded runs); goodput {:.1f} %",
                                         k.wall_s / kDaySeconds, k.wall_s_p10 / kDaySeconds, k.wall_s_p90 / kDaySeconds,
                                         k.seeds, 100 * k.goodput),
               out);
    figure_row("interruptions", fmt::format("{:.1f} (MTBF {:.2f} h)", k.interruptions, k.mtbf_s / 3600), out);
    figure_row("checkpoints", fmt::format("every {:.0f} s ({} steps), {:.4g} GB in {:.1f} s", k.checkpoint_interval_s,
                                          k.checkpoint_interval_steps, k.checkpoint_bytes * 1e-9, k.checkpoint_write_s),
               out);
    figure_row("GPU-hours", fmt::format("{:.4g}{}", k.gpu_hours, k.cost > 0 ? fmt::format(", cost {:.4g}", k.cost) : ""),
               out);
    figure_row("energy", k.energy_mwh ? fmt::format("{:.4g} MWh (PUE {:.2f})", *k.energy_mwh, s.pue)
                                      : std::string("not modelled"),
               out);
    out << "</table>\n";
  }
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::vector<TimelineRow> timeline_rows(const std::vector<TraceSpan>& spans, Duration resolution) {
  using Key = std::tuple<int, int, std::string, std::string>;  // rank, stream order, stream, wait kind
  std::map<Key, std::vector<const TraceSpan*>> by_row;
  for (const TraceSpan& s : spans) {
    by_row[Key{s.rank, stream_order(s.stream), s.stream, s.stream == "wait" ? s.name : ""}].push_back(&s);
  }
  std::vector<TimelineRow> rows;
  for (auto& [key, members] : by_row) {
    std::stable_sort(members.begin(), members.end(), [](const TraceSpan* a, const TraceSpan* b) {
      return std::tie(a->start, a->end) < std::tie(b->start, b->end);
    });
    TimelineRow row{std::get<0>(key), std::get<2>(key), {}};
    for (const TraceSpan* s : members) {
      if (!row.rects.empty() && s->start <= row.rects.back().end + resolution) {
        TimelineRect& rect = row.rects.back();
        rect.end = std::max(rect.end, s->end);
        ++rect.spans;
      } else {
        row.rects.push_back(TimelineRect{s->start, s->end, 1, s->name});
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<size_t> pareto_front(const SearchResult& result) {
  std::vector<size_t> simulated;
  for (size_t i = 0; i < result.outcomes.size(); ++i) {
    if (!result.outcomes[i].rejected) simulated.push_back(i);
  }
  const auto& o = result.outcomes;
  std::stable_sort(simulated.begin(), simulated.end(), [&](size_t a, size_t b) {
    const LayoutMetrics& x = o[a].metrics;
    const LayoutMetrics& y = o[b].metrics;
    if (x.peak_bytes != y.peak_bytes) return x.peak_bytes < y.peak_bytes;
    return x.tokens_per_s > y.tokens_per_s;
  });
  std::vector<size_t> front;
  for (size_t i : simulated) {
    if (front.empty() || o[i].metrics.tokens_per_s > o[front.back()].metrics.tokens_per_s) front.push_back(i);
  }
  return front;
}

void write_run_html(const TrainingReport& r, const RunContext& c, const HtmlReportSource& source, std::ostream& out) {
  const Scenario& s = *c.scenario;
  const Cluster& cluster = *c.cluster;
  write_head("clustersim report: " + s.name, out);
  out << "<h1>" << html_escape(s.name) << "</h1>\n<table class=\"figures\" id=\"summary\">\n";
  figure_row("cluster", fmt::format("{} GPU{}, {} node{} of {} ({})", cluster.gpu_count(),
                                    cluster.gpu_count() == 1 ? "" : "s", cluster.node_count(),
                                    cluster.node_count() == 1 ? "" : "s", s.cluster.nodes.front().name,
                                    cluster.node_spec(0).gpu.name),
             out);
  figure_row("model", fmt::format("{}: {} layers, hidden {}, {} heads; seq {}, global batch {}, micro batch {}",
                                  s.model.name, s.model.layers, s.model.hidden, s.model.heads, s.training.seq_len,
                                  s.training.global_batch, s.training.micro_batch),
             out);
  figure_row("layout", describe_layout(s.layout), out);
  figure_row("step time", seconds_text(r.step_time_s), out);
  figure_row("tokens/s", fmt::format("{:.0f}", r.tokens_per_s), out);
  figure_row("MFU / HFU", fmt::format("{:.1f} % / {:.1f} % ({:.1f} model TFLOP/s per GPU)", 100 * r.mfu, 100 * r.hfu,
                                      r.model_tflops_per_gpu),
             out);
  figure_row("peak memory", fmt::format("{} of {} (stage {}){}", gb(static_cast<double>(r.peak_memory.count())),
                                        gb(static_cast<double>(r.capacity.count())), r.peak_stage,
                                        r.fits ? "" : ": does not fit"),
             out);
  figure_row("simulation", fmt::format("{} fidelity, {} simulated rank{}, {} events", name_of(c.fidelity),
                                       r.step.ranks.size(), r.step.ranks.size() == 1 ? "" : "s", r.step.events),
             out);
  figure_row("compute model", r.compute_model, out);
  figure_row("host", r.host_model, out);
  figure_row("FLOP convention", kFlopConvention, out);
  out << "</table>\n";
  write_timeline(r, out);
  write_breakdown(r, out);
  write_memory(r, out);
  write_energy_and_campaign(r, c, out);
  // Everything `run` prints (the pods of a three-tier fabric, MoE routing and accuracy, the
  // collectives and power models, ...), as it prints it.
  std::ostringstream text;
  write_run_summary(r, c, text);
  out << "<h2 id=\"run\">The run's text report</h2>\n<pre id=\"run-text\">" << html_escape(text.str()) << "</pre>\n";
  write_tail(source, out);
}

void write_search_html(const Scenario& s, const SearchResult& result, int top, double wall_s,
                       const HtmlReportSource& source, std::ostream& out) {
  write_head("clustersim search report: " + s.name, out);
  size_t rejected = 0;
  for (const RejectionSummary& r : result.rejected) rejected += static_cast<size_t>(r.count);
  out << "<h1>" << html_escape(s.name) << ": layout search</h1>\n<table class=\"figures\" id=\"summary\">\n";
  figure_row("objective", std::string(name_of(s.search->objective)), out);
  figure_row("candidates", fmt::format("{} in the space, {} simulated, {} rejected", result.candidates.size(),
                                       result.evaluated, rejected),
             out);
  figure_row("simulation",
             fmt::format("screened at {} fidelity{}; {:.2f} s", name_of(result.screening_fidelity),
                         result.reranked ? fmt::format(", the best {} re-ranked at the scenario's own ({})",
                                                       result.reranked_layouts, describe(result.rerank_stop))
                                         : "",
                         wall_s),
             out);
  out << "</table>\n";

  // The scatter: tokens/s against peak memory.
  std::vector<size_t> simulated;
  double max_tokens = 0;
  double max_peak = 0;
  int64_t capacity = 0;
  for (size_t i = 0; i < result.outcomes.size(); ++i) {
    const CandidateOutcome& o = result.outcomes[i];
    if (o.rejected) continue;
    simulated.push_back(i);
    max_tokens = std::max(max_tokens, o.metrics.tokens_per_s);
    max_peak = std::max(max_peak, static_cast<double>(o.metrics.peak_bytes));
    capacity = std::max(capacity, o.metrics.capacity_bytes);
  }
  const std::vector<size_t> front = pareto_front(result);
  const bool has_winner = !result.ranking.empty();
  const size_t winner = has_winner ? result.ranking.front().index : 0;
  out << "<h2 id=\"candidates\">Candidates</h2>\n";
  out << fmt::format("<p>{} simulated candidates (screening figures), {} on the Pareto front of tokens/s against peak "
                     "memory (red, joined); the winner circled.</p>\n",
                     simulated.size(), front.size());
  if (!simulated.empty()) {
    constexpr int kLeft = 80, kTop = 10, kWidth = 900, kHeight = 420, kBottom = 40;
    const double x_max = std::max(max_peak, static_cast<double>(capacity)) * 1.05 * 1e-9;
    const double y_max = max_tokens * 1.08;
    const auto px = [&](double bytes) { return kLeft + bytes * 1e-9 / x_max * kWidth; };
    const auto py = [&](double tokens) { return kTop + kHeight - tokens / y_max * kHeight; };
    out << "<svg id=\"search-chart\" width=\"" << kLeft + kWidth + 20 << "\" height=\"" << kTop + kHeight + kBottom
        << "\">\n";
    for (double t : ticks(x_max)) {
      if (t > x_max) break;
      const double x = kLeft + t / x_max * kWidth;
      out << "<line class=\"grid\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << kTop << "\" y2=\""
          << kTop + kHeight << "\"/><text x=\"" << num(x) << "\" y=\"" << kTop + kHeight + 14
          << "\" text-anchor=\"middle\">" << num(t) << "</text>\n";
    }
    for (double t : ticks(y_max)) {
      if (t > y_max) break;
      const double y = py(t);
      out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kWidth << "\" y1=\"" << num(y)
          << "\" y2=\"" << num(y) << "\"/><text x=\"" << kLeft - 4 << "\" y=\"" << num(y + 4)
          << "\" text-anchor=\"end\">" << (t >= 1 ? fmt::format("{:.0f}", t) : fmt::format("{:.3g}", t))
          << "</text>\n";
    }
    out << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << kTop + kHeight + 32
        << "\" text-anchor=\"middle\">peak memory per GPU (GB)</text><text x=\"12\" y=\"" << kTop + kHeight / 2
        << "\" transform=\"rotate(-90 12 " << kTop + kHeight / 2 << ")\" text-anchor=\"middle\">tokens/s</text>\n";
    if (capacity > 0) {
      const double x = px(static_cast<double>(capacity));
      out << "<line class=\"capacity\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << kTop << "\" y2=\""
          << kTop + kHeight << "\"><title>GPU capacity " << gb(static_cast<double>(capacity)) << "</title></line>\n";
    }
    std::vector<char> on_front(result.outcomes.size(), 0);
    for (size_t i : front) on_front[i] = 1;
    out << "<polyline class=\"pareto\" points=\"";
    for (size_t i : front) {
      const LayoutMetrics& m = result.outcomes[i].metrics;
      out << num(px(static_cast<double>(m.peak_bytes))) << ',' << num(py(m.tokens_per_s)) << ' ';
    }
    out << "\"/>\n";
    for (size_t i : simulated) {
      const LayoutCandidate& cand = result.candidates[i];
      const LayoutMetrics& m = result.outcomes[i].metrics;
      out << "<circle class=\"candidate" << (on_front[i] ? " pareto" : "") << "\" data-index=\"" << i << "\" cx=\""
          << num(px(static_cast<double>(m.peak_bytes))) << "\" cy=\"" << num(py(m.tokens_per_s)) << "\" r=\"3.5\"><title>"
          << html_escape(fmt::format("#{}: {} · micro batch {} · recompute {}: {:.0f} tokens/s, {}, step {}", i,
                                     describe_layout(cand.layout), cand.micro_batch, name_of(cand.recompute),
                                     m.tokens_per_s, gb(static_cast<double>(m.peak_bytes)),
                                     seconds_text(m.step_time_s)))
          << "</title></circle>\n";
    }
    if (has_winner) {
      const LayoutMetrics& m = result.outcomes[winner].metrics;
      out << "<circle class=\"winner\" data-index=\"" << winner << "\" cx=\"" << num(px(static_cast<double>(m.peak_bytes)))
          << "\" cy=\"" << num(py(m.tokens_per_s)) << "\" r=\"8\"><title>the winner</title></circle>\n";
    }
    out << "</svg>\n";
  }

  out << "<h2 id=\"ranking\">Best layouts</h2>\n";
  if (result.ranking.empty()) {
    out << "<p>No layout is feasible.</p>\n";
  } else {
    out << "<table class=\"list\" id=\"ranking-table\"><tr><th>rank</th><th class=\"l\">layout</th><th>micro batch</th>"
           "<th class=\"l\">recompute</th><th>step time</th><th>tokens/s</th><th>MFU</th><th>peak</th>"
           "<th class=\"l\">fidelity</th></tr>\n";
    const size_t shown = std::min(result.ranking.size(), static_cast<size_t>(std::max(top, 1)));
    for (size_t k = 0; k < shown; ++k) {
      const RankedLayout& rl = result.ranking[k];
      const LayoutCandidate& cand = result.candidates[rl.index];
      out << fmt::format("<tr class=\"ranked\" data-index=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{}</td>"
                         "<td class=\"l\">{}</td><td>{}</td><td>{:.0f}</td><td>{:.1f} %</td><td>{}</td>"
                         "<td class=\"l\">{}</td></tr>\n",
                         rl.index, k + 1, html_escape(describe_layout(cand.layout)), cand.micro_batch,
                         name_of(cand.recompute), seconds_text(rl.metrics.step_time_s), rl.metrics.tokens_per_s,
                         100 * rl.metrics.mfu, gb(static_cast<double>(rl.metrics.peak_bytes)),
                         name_of(rl.metrics.fidelity));
    }
    out << "</table>\n";
  }

  out << "<h2 id=\"rejected\">Rejected</h2>\n";
  if (result.rejected.empty()) {
    out << "<p>No candidate was rejected.</p>\n";
  } else {
    out << "<table class=\"list\" id=\"rejected-table\"><tr><th class=\"l\">reason</th><th>count</th>"
           "<th class=\"l\">example</th></tr>\n";
    for (const RejectionSummary& r : result.rejected) {
      out << fmt::format("<tr class=\"rejected\" data-reason=\"{}\" data-count=\"{}\"><td class=\"l\">{}</td><td>{}</td>"
                         "<td class=\"l\">{}</td></tr>\n",
                         name_of(r.reason), r.count, html_escape(std::string(describe(r.reason))), r.count,
                         html_escape(r.message));
    }
    out << "</table>\n";
  }
  write_tail(source, out);
}

namespace {

// "8 B", "64 KiB", "1 GiB": a size on the chart's axis (powers of two in binary units).
std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", std::round(bytes * 100) / 100, units[u]);
}

}  // namespace

void write_collective_html(const std::string& title, const CollectiveSweep& chosen, const std::string& chosen_label,
                           const std::vector<AlgorithmSweep>& sweeps, const std::string& command_line,
                           std::ostream& out) {
  write_head("clustersim collective report: " + title, out);
  out << "<h1>" << html_escape(title) << "</h1>\n<table class=\"figures\" id=\"summary\">\n";
  figure_row("sizes", fmt::format("{} ({} to {} B)", chosen.rows.size(), chosen.rows.empty() ? 0 : chosen.rows.front().size,
                                  chosen.rows.empty() ? 0 : chosen.rows.back().size),
             out);
  figure_row("bus factor", fmt::format("busbw = algbw × {:.4g} (nccl-tests' factor for this op over {} ranks)",
                                       chosen.bus_factor, chosen.ranks),
             out);
  out << "</table>\n";

  // The chart: every algorithm's busbw against log2(size).
  double max_bw = 0;
  double min_size = 0;
  double max_size = 0;
  bool first = true;
  auto extend = [&](const CollectiveSweep& sw) {
    for (const CollectiveRow& row : sw.rows) {
      max_bw = std::max(max_bw, row.algbw_gbps() * sw.bus_factor);
      const double size = static_cast<double>(row.size);
      min_size = first ? size : std::min(min_size, size);
      max_size = first ? size : std::max(max_size, size);
      first = false;
    }
  };
  extend(chosen);
  for (const AlgorithmSweep& a : sweeps) {
    if (a.sweep) extend(*a.sweep);
  }
  out << "<h2 id=\"busbw\">Bus bandwidth against size</h2>\n";
  out << "<p class=\"legend\">";
  for (const AlgorithmSweep& a : sweeps) {
    if (!a.sweep) continue;
    out << "<span class=\"a-" << name_of(a.algorithm) << "\"><i></i>" << name_of(a.algorithm) << "</span>";
  }
  out << "<span><i style=\"background:#222\"></i>" << html_escape(chosen_label) << " (the table below)</span></p>\n";
  if (!first) {
    constexpr int kLeft = 70, kTop = 10, kWidth = 900, kHeight = 380, kBottom = 40;
    const double lo = std::log2(min_size);
    const double span = std::max(1.0, std::log2(max_size) - lo);
    const double y_max = std::max(max_bw * 1.08, 1e-9);
    const auto px = [&](double size) { return kLeft + (std::log2(size) - lo) / span * kWidth; };
    const auto py = [&](double bw) { return kTop + kHeight - bw / y_max * kHeight; };
    out << "<svg id=\"collective-chart\" width=\"" << kLeft + kWidth + 20 << "\" height=\"" << kTop + kHeight + kBottom
        << "\">\n";
    const int label_every = std::max(1, static_cast<int>(span) / 10 + 1);
    for (int e = 0; e <= static_cast<int>(span); e += label_every) {
      const double x = kLeft + e / span * kWidth;
      out << "<line class=\"grid\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << kTop << "\" y2=\""
          << kTop + kHeight << "\"/><text x=\"" << num(x) << "\" y=\"" << kTop + kHeight + 14
          << "\" text-anchor=\"middle\">" << size_text(std::exp2(lo + e)) << "</text>\n";
    }
    for (double t : ticks(y_max)) {
      if (t > y_max) break;
      const double y = py(t);
      out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kWidth << "\" y1=\"" << num(y)
          << "\" y2=\"" << num(y) << "\"/><text x=\"" << kLeft - 4 << "\" y=\"" << num(y + 4)
          << "\" text-anchor=\"end\">" << fmt::format("{:g}", t) << "</text>\n";
    }
    out << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << kTop + kHeight + 32
        << "\" text-anchor=\"middle\">size (bytes, nccl-tests' size column)</text>\n";
    out << "<text transform=\"translate(14," << kTop + kHeight / 2 << ") rotate(-90)\" text-anchor=\"middle\">busbw (GB/s)</text>\n";
    for (const AlgorithmSweep& a : sweeps) {
      if (!a.sweep || a.sweep->rows.empty()) continue;
      const CollectiveSweep& sw = *a.sweep;
      out << "<g class=\"series a-" << name_of(a.algorithm) << "\" data-algorithm=\"" << name_of(a.algorithm) << "\">";
      out << "<polyline class=\"algo\" points=\"";
      for (const CollectiveRow& row : sw.rows) {
        out << num(px(static_cast<double>(row.size))) << "," << num(py(row.algbw_gbps() * sw.bus_factor)) << " ";
      }
      out << "\"/>";
      for (const CollectiveRow& row : sw.rows) {
        const double bw = row.algbw_gbps() * sw.bus_factor;
        out << "<circle cx=\"" << num(px(static_cast<double>(row.size))) << "\" cy=\"" << num(py(bw))
            << "\" r=\"3\"><title>" << name_of(a.algorithm) << " " << name_of(row.choice.protocol) << ", "
            << row.size << " B: " << fmt::format("{:.2f}", bw) << " GB/s, "
            << fmt::format("{:.2f}", row.time.to_microseconds()) << " us</title></circle>";
      }
      out << "</g>\n";
    }
    out << "<g class=\"chosen\">";
    for (const CollectiveRow& row : chosen.rows) {
      const double bw = row.algbw_gbps() * chosen.bus_factor;
      out << "<rect class=\"chosen\" x=\"" << num(px(static_cast<double>(row.size)) - 2.5) << "\" y=\""
          << num(py(bw) - 2.5) << "\" width=\"5\" height=\"5\"><title>chosen: " << name_of(row.choice.algorithm) << " "
          << name_of(row.choice.protocol) << ", " << row.size << " B: " << fmt::format("{:.2f}", bw)
          << " GB/s</title></rect>";
    }
    out << "</g>\n</svg>\n";
  }
  bool any_not = false;
  for (const AlgorithmSweep& a : sweeps) {
    if (a.sweep) continue;
    if (!any_not) out << "<ul id=\"not-applicable\">\n";
    any_not = true;
    // The CLI's message without its flag: "algorithm "nvls" cannot run all_reduce on this group (...)".
    const std::string why = a.why_not.rfind("--algo: ", 0) == 0 ? a.why_not.substr(8) : a.why_not;
    out << "<li>" << name_of(a.algorithm) << ": " << html_escape(why) << "</li>\n";
  }
  if (any_not) out << "</ul>\n";

  out << "<h2 id=\"table\">" << html_escape(chosen_label) << " per size</h2>\n<table class=\"list\" id=\"collective-table\">\n"
      << "<tr><th>size (B)</th><th>count</th><th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th>"
         "<th class=\"l\">algorithm</th><th class=\"l\">protocol</th></tr>\n";
  for (const CollectiveRow& row : chosen.rows) {
    out << fmt::format("<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td class=\"l\">{}</td>"
                       "<td class=\"l\">{}</td></tr>\n",
                       row.size, row.count, row.time.to_microseconds(), row.algbw_gbps(),
                       row.algbw_gbps() * chosen.bus_factor, name_of(row.choice.algorithm),
                       name_of(row.choice.protocol));
  }
  out << "</table>\n";
  write_command_and_end(command_line, out);
}

}  // namespace clustersim
