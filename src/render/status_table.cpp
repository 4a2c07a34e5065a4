#include "gpurun/render/status_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cells.hpp"
#include "gpurun/util/table.hpp"
#include "gpurun/util/terminal.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

Colour state_colour(const std::string& state) {
  if (state == "free") return Colour::green;
  if (state.starts_with("reserved")) return Colour::yellow;
  if (state.starts_with("not offered")) return Colour::dim;
  return Colour::red;
}

}  // namespace

std::vector<std::string> gpu_users(const GpuAssessment& a) {
  std::vector<std::string> users;
  const auto add = [&users](const std::string& user) {
    if (!user.empty() && std::find(users.begin(), users.end(), user) == users.end()) users.push_back(user);
  };
  for (const GpuProcess& p : a.gpu.processes) add(p.user);
  for (const Holder& h : a.holders)
    if (h.kind == Holder::Kind::container) add(h.user);
  for (const Holder& h : a.holders)
    if (h.kind == Holder::Kind::reservation) add(h.user);
  return users;
}

std::string short_state(const GpuAssessment& a) {
  if (a.withheld || a.gpu.mig_enabled) return "not offered";
  if (a.free) return "free";
  const std::vector<std::string> users = gpu_users(a);
  const bool only_reserved = a.gpu.processes.empty() && !a.holders.empty() &&
                             std::all_of(a.holders.begin(), a.holders.end(),
                                         [](const Holder& h) { return h.kind == Holder::Kind::reservation; });
  if (only_reserved) return users.empty() ? "reserved" : fmt::format("reserved: {}", fmt::join(users, ","));
  std::vector<std::string> parts;
  std::vector<std::string> containers;  // named where nobody is known to run them
  for (const Holder& h : a.holders)
    if (h.kind == Holder::Kind::container) containers.push_back(h.name);
  if (!users.empty())
    parts.push_back(fmt::format("{}", fmt::join(users, ",")));
  else if (!containers.empty())
    parts.push_back(fmt::format("{}", fmt::join(containers, ",")));
  else if (const std::size_t n = a.gpu.processes.size(); n > 0)
    parts.push_back(fmt::format("{} proc{}", n, n == 1 ? "" : "s"));  // their owners unknown (another host's PIDs)
  if (a.gpu.utilization_percent) parts.push_back(fmt::format("{:.0f}%", *a.gpu.utilization_percent));
  return parts.empty() ? "busy" : fmt::format("busy: {}", fmt::join(parts, " "));
}

std::string gpu_name_cell(const std::string& name, bool without_vendor) {
  if (name.empty()) return "?";
  return without_vendor && name.starts_with("NVIDIA ") ? name.substr(7) : name;
}

namespace {

std::string status_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuAssessment>& mig_units,
                         const StatusLayout& layout, bool short_names) {
  using Align = Column::Align;
  const bool numa =
      std::any_of(gpus.begin(), gpus.end(), [](const GpuAssessment& a) { return a.gpu.numa_node.has_value(); });
  // Names give way first, down to 14 columns ("H100 80GB HBM3"), then users, then the state.
  std::vector<Column> columns{Column::fitted("GPU", Align::right), Column::shrinkable("NAME", 14),
                              Column::fitted("MEMORY", Align::right), Column::fitted("UTIL", Align::right)};
  if (numa) columns.push_back(Column::fitted("NUMA", Align::right));
  if (layout.verbose) {
    columns.push_back(Column::fitted("PROCS", Align::right));
    columns.push_back(Column::fitted("SCORE", Align::right));
  }
  if (layout.idle_s) columns.push_back(Column::fitted("IDLE", Align::right));
  columns.push_back(Column::shrinkable("USER", 8));
  columns.push_back(Column::shrinkable("STATE", 12));
  const std::size_t state_column = columns.size() - 1;
  Table table(std::move(columns));
  if (!layout.verbose) table.fit(layout.width, {1, state_column - 1, state_column});  // verbose: the whole truth

  std::vector<std::vector<std::string>> under;  // the lines under each row (--verbose)
  const auto add = [&](const GpuAssessment& a, std::string index, std::string name, std::string util) {
    std::vector<std::string> cells{std::move(index), std::move(name), memory_cell(a.gpu), std::move(util)};
    if (numa) cells.push_back(a.gpu.numa_node ? std::to_string(*a.gpu.numa_node) : "-");
    if (layout.verbose) {
      cells.push_back(a.processes_known ? std::to_string(a.gpu.processes.size()) : "?");
      cells.push_back(fmt::format("{:.1f}", a.score));
    }
    if (layout.idle_s) {
      const auto idle = a.gpu.mig ? layout.idle_s->end() : layout.idle_s->find(a.gpu.index);
      cells.push_back(idle == layout.idle_s->end()
                          ? "-"
                          : format_duration(std::chrono::seconds(idle->second), DurationStyle::brief));
    }
    const std::vector<std::string> users = gpu_users(a);
    cells.push_back(users.empty() ? "-" : fmt::format("{}", fmt::join(users, ",")));
    std::string state = short_state(a);
    const Colour colour = state_colour(state);
    cells.push_back(std::move(state));
    table.add_row(std::move(cells),
                  [colour, on = layout.colour](const std::string& cell) { return coloured(cell, colour, on); });
    std::vector<std::string> lines;
    if (layout.verbose) {
      if (!a.reasons.empty()) lines.push_back(fmt::format("why: {}", fmt::join(a.reasons, "; ")));
      if (!a.notes.empty()) lines.push_back(fmt::format("note: {}", fmt::join(a.notes, "; ")));
      if (a.gpu.mig) lines.push_back(fmt::format("uuid: {}", a.gpu.uuid));
    }
    under.push_back(std::move(lines));
  };
  for (const GpuAssessment& a : gpus) {
    add(a, std::to_string(a.gpu.index), gpu_name_cell(a.gpu.name, short_names),
        number_or_unknown(a.gpu.utilization_percent, "%"));
    for (const GpuAssessment& unit : mig_units) {
      const MigPlace& place = *unit.gpu.mig;
      if (place.gpu_index != a.gpu.index) continue;
      add(unit, "",
          fmt::format("  MIG {} GI {} CI {}", place.profile.empty() ? "?" : place.profile, place.gpu_instance_id,
                      place.compute_instance_id),
          "n/a");
    }
  }
  if (!short_names && !layout.verbose && table.natural_width() > layout.width) return {};  // again, without "NVIDIA "
  const std::vector<std::string> lines = table.lines();
  std::string text = lines.front() + '\n';
  for (std::size_t row = 0; row < under.size(); ++row) {
    text += lines[row + 1] + '\n';
    // Reasons name containers and images, anyone's to choose: never an escape to the terminal.
    for (const std::string& line : under[row]) text += "      " + text::terminal_safe(line) + '\n';
  }
  return text;
}

}  // namespace

std::string format_status_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuAssessment>& mig_units,
                                const StatusLayout& layout) {
  std::string text = status_table(gpus, mig_units, layout, false);
  return text.empty() ? status_table(gpus, mig_units, layout, true) : text;
}

}  // namespace gpurun
