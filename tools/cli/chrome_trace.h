#pragma once

// Chrome trace-event JSON (the format Perfetto and chrome://tracing open) of a simulated step:
// one process per node, one thread per GPU stream ("gpu 3 compute", "gpu 3 tp", ...), complete
// ("X") events with microsecond timestamps. Keys are written in a fixed order so the same step gives
// byte-identical files.

#include <ostream>
#include <vector>

#include "parallelism/step_simulation.h"
#include "topology/cluster.h"

namespace clustersim {

// Writes `spans` as {"traceEvents": [...], "displayTimeUnit": "ns"}. Spans on GPUs outside the
// cluster throw InternalError.
void write_chrome_trace(const std::vector<TraceSpan>& spans, const Cluster& cluster, std::ostream& out);

}  // namespace clustersim
