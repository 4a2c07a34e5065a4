#pragma once
// `gpurun status` for people: one line per GPU (and per MIG instance) that fits the terminal, with
// who holds it and a short state; the full reasons under --verbose.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/select/selection.hpp"

namespace gpurun {

struct StatusLayout {
  std::size_t width = 80;  // the columns to fit (terminal_width())
  bool verbose = false;    // PROCS and SCORE columns, each GPU's reasons and notes under its row; nothing cut
  bool colour = false;     // states coloured as gpustat does (free green, busy red, reserved yellow)
  // How long each held GPU has been idle (seconds by index), from the gpurun service: an IDLE
  // column where given ("-" for a GPU not in it); nullopt (no service): no column.
  std::optional<std::map<int, long long>> idle_s;
};

// "free", "busy: alice 97%", "reserved: bob", "not offered" (withheld by the site, or MIG mode).
std::string short_state(const GpuAssessment& a);

// Who holds the GPU: the users of its processes, containers and reservations, once each, in that
// order; empty when nobody is known.
std::vector<std::string> gpu_users(const GpuAssessment& a);

// A GPU's name in a table: "?" when unknown; `without_vendor`: "H100 80GB HBM3" for
// "NVIDIA H100 80GB HBM3" (where the full names would not fit).
std::string gpu_name_cell(const std::string& name, bool without_vendor);

// The table: GPU, NAME, MEMORY, UTIL, [NUMA], [IDLE], USER, STATE; each MIG GPU's instances (`mig_units`)
// on rows under it. Where it is wider than `layout.width`, names lose their "NVIDIA ", and cells
// too long are cut with "…": names first, then users, then states.
std::string format_status_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuAssessment>& mig_units,
                                const StatusLayout& layout);

}  // namespace gpurun
