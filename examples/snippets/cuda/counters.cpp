// luminal/cuda/counters.hpp: each event of a device's plans counted in one place: the graph
// executor's over the device, cuBLASLt's for the plan and the device at once. No GPU needed.
#include "luminal/cuda/counters.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  GraphCounters graphs;  // a Device's `graphs`
  graphs.instantiated();
  graphs.launched(/*launch_ns=*/2000, /*dims_copied=*/true, /*dims_ns=*/500);
  expect(graphs.stats().instantiations == 1 && graphs.stats().dims_host_ns == 500,
         "the graph executor's events");

  LtTotals device;  // a Device's `lt_totals`
  LtCounts plan(device), other(device);
  plan.prepared(/*kept=*/true);  // counted for the plan and for the device
  other.prepared(/*kept=*/false);
  expect(plan.plan().prepares == 1 && plan.plan().algo_kept == 1, "the plan's own counts");
  expect(device.stats().prepares == 2 && device.stats().algo_kept == 1, "the device's totals");
}
