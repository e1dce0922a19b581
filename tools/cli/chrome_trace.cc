#include "tools/cli/chrome_trace.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.h"

namespace clustersim {

namespace {

// Fixed thread ids per stream so that a GPU's streams sort together in the viewer; "host" is the
// simulated rank's host thread (parallelism/step_simulation.h).
int stream_slot(const std::string& stream) {
  static const std::map<std::string, int> kSlots{{"compute", 0}, {"tp", 1}, {"cp", 2}, {"ep", 3},
                                                 {"etp", 4},     {"dp", 5}, {"edp", 6}, {"pp", 7}, {"host", 8}};
  auto it = kSlots.find(stream);
  return it == kSlots.end() ? 15 : it->second;
}

double to_us(Time t) { return static_cast<double>(t.ps()) * 1e-6; }

}  // namespace

void write_chrome_trace(const std::vector<TraceSpan>& spans, const Cluster& cluster, std::ostream& out) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  std::set<int> nodes;
  std::set<std::pair<int, std::string>> threads;
  for (const auto& s : spans) {
    if (s.gpu < 0 || s.gpu >= cluster.gpu_count()) throw InternalError("trace span on a GPU outside the cluster");
    const int node = cluster.node_of(s.gpu);
    nodes.insert(node);
    threads.insert({s.gpu, s.stream});
    nlohmann::ordered_json e;
    e["name"] = s.name;
    e["cat"] = s.stream;
    e["ph"] = "X";
    e["ts"] = to_us(s.start);
    e["dur"] = to_us(s.end) - to_us(s.start);
    e["pid"] = node;
    e["tid"] = s.gpu * 16 + stream_slot(s.stream);
    events.push_back(std::move(e));
  }
  for (int node : nodes) {
    nlohmann::ordered_json e;
    e["name"] = "process_name";
    e["ph"] = "M";
    e["pid"] = node;
    e["args"]["name"] = "node " + std::to_string(node);
    events.push_back(std::move(e));
  }
  for (const auto& [gpu, stream] : threads) {
    nlohmann::ordered_json e;
    e["name"] = "thread_name";
    e["ph"] = "M";
    e["pid"] = cluster.node_of(gpu);
    e["tid"] = gpu * 16 + stream_slot(stream);
    e["args"]["name"] = "gpu " + std::to_string(gpu) + " " + stream;
    events.push_back(std::move(e));
  }
  nlohmann::ordered_json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  out << doc.dump() << "\n";
}

}  // namespace clustersim
