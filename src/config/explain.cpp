#include "gpurun/config/explain.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpurun/config/settings.hpp"
#include "gpurun/util/table.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;

// Values from GPURUN_* variables and flags are not checked for UTF-8: replace what is invalid.
std::string display(const json& value) {
  return value.is_null() ? "(unset)" : value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// "system /etc/...:4 + flag --volume" for a list built by several layers.
std::string describe_sources(const ConfigValue& v) {
  if (v.item_sources.empty()) return v.source.describe();
  std::vector<std::string> parts;
  for (const ConfigSource& s : v.item_sources)
    if (std::string d = s.describe(); std::find(parts.begin(), parts.end(), d) == parts.end()) parts.push_back(d);
  return fmt::format("{}", fmt::join(parts, " + "));
}

json source_json(const ConfigSource& s) {
  json j{{"layer", kind_name(s.kind)}};
  if (!s.where.empty()) j["where"] = s.where;
  if (s.line > 0) j["line"] = s.line;
  if (!s.profile.empty()) j["profile"] = s.profile;
  return j;
}

std::string_view state_name(ConfigFile::State state) {
  switch (state) {
    case ConfigFile::State::loaded:
      return "loaded";
    case ConfigFile::State::not_found:
      return "not found";
    case ConfigFile::State::ignored:
      return "ignored (--no-config)";
    case ConfigFile::State::untrusted:
      return "ignored (not trusted)";
  }
  return "";
}

}  // namespace

std::string config_table(const Config& config) {
  struct Row {
    std::string key, value, source;
  };
  std::vector<Row> rows;
  for (const ConfigKey& k : config_keys()) {
    if (k.site_policy) {
      const auto it = config.policy.sources.find(k.name);
      json value = nullptr;
      if (k.name == "allowed_gpus" && config.policy.allowed_gpus) value = *config.policy.allowed_gpus;
      if (k.name == "max_gpus_per_launch" && config.policy.max_gpus_per_launch)
        value = *config.policy.max_gpus_per_launch;
      if (k.name == "max_runtime" && config.policy.max_runtime)
        value = format_duration(*config.policy.max_runtime, DurationStyle::brief);
      if (k.name == "refused_docker_options" && it != config.policy.sources.end())
        value = config.policy.refused_docker_options;
      if (k.name == "allowed_images" && config.policy.allowed_images) value = *config.policy.allowed_images;
      if (k.name == "allowed_docker_options" && it != config.policy.sources.end())
        value = config.policy.allowed_docker_options;
      if (k.name == "admin_group" && it != config.policy.sources.end()) value = config.policy.admin_group;
      if (k.name == "allow_sharing" && it != config.policy.sources.end()) value = config.policy.allow_sharing;
      if (k.name == "history_visibility" && it != config.policy.sources.end())
        value = std::string(word_of(config.policy.history_visibility));
      rows.push_back({k.name, value.is_null() ? "(not set)" : value.dump(),
                      it == config.policy.sources.end() ? "site policy" : "site policy, " + it->second.describe()});
    } else {
      const ConfigValue& v = config.at(k.name);
      rows.push_back({k.name, display(v.value), describe_sources(v)});
    }
  }
  if (config.profile)
    rows.push_back({"profile", config.profile->name,
                    config.profile->chosen_by.starts_with("--profile") ? "flag " + config.profile->chosen_by
                                                                       : "env " + config.profile->chosen_by});

  Table table({Column::fitted("KEY"),
               {"VALUE", Column::Align::left, 0, 40},
               Column::fitted("SOURCE")});  // a long list overflows
  for (const Row& r : rows) table.add_row({r.key, r.value, r.source});
  std::string out = table.str();

  out += "\nFiles (lowest precedence first):\n";
  for (const ConfigFile& f : config.files)
    out += fmt::format("  {:<8} {}  {}\n", kind_name(f.layer), f.path, state_name(f.state));
  if (!config.profiles.empty()) {
    out += "\nProfiles:\n";
    std::size_t name_width = 0;
    for (const auto& [name, where] : config.profiles) name_width = std::max(name_width, name.size());
    for (const auto& [name, where] : config.profiles) {
      std::vector<std::string> places;
      for (const ConfigSource& s : where) places.push_back(s.location());
      out += fmt::format("  {:<{}}  {}\n", name, name_width, fmt::join(places, ", "));
    }
  }
  return out;
}

json config_json(const Config& config) {
  json keys = json::object();
  for (const ConfigKey& k : config_keys()) {
    if (k.site_policy) continue;
    const ConfigValue& v = config.at(k.name);
    json entry{{"value", v.value}, {"source", source_json(v.source)}};
    if (find_setting(k.name)->type == ValueType::appended_list) {
      entry["items"] = json::array();
      for (std::size_t i = 0; i < v.value.size() && i < v.item_sources.size(); ++i)
        entry["items"].push_back({{"value", v.value[i]}, {"source", source_json(v.item_sources[i])}});
    }
    keys[k.name] = std::move(entry);
  }

  json policy = json::object();
  const SitePolicy& p = config.policy;
  const auto rule = [&](const std::string& key, json value) {
    const auto it = p.sources.find(key);
    policy[key] =
        it == p.sources.end() ? json(nullptr) : json{{"value", std::move(value)}, {"source", source_json(it->second)}};
  };
  rule("allowed_gpus", p.allowed_gpus ? json(*p.allowed_gpus) : json(nullptr));
  rule("max_gpus_per_launch", p.max_gpus_per_launch ? json(*p.max_gpus_per_launch) : json(nullptr));
  rule("max_runtime", p.max_runtime ? json(p.max_runtime->count()) : json(nullptr));
  rule("refused_docker_options", p.refused_docker_options);
  rule("allowed_images", p.allowed_images ? json(*p.allowed_images) : json(nullptr));
  rule("allowed_docker_options", p.allowed_docker_options);
  rule("admin_group", p.admin_group);
  rule("allow_sharing", p.allow_sharing);
  rule("history_visibility", std::string(word_of(p.history_visibility)));
  if (p.idle_policy) {
    const IdlePolicy& idle = *p.idle_policy;
    const auto seconds = [](const std::optional<std::chrono::seconds>& d) {
      return d ? json(d->count()) : json(nullptr);
    };
    rule("idle_policy", {{"below_percent", idle.below_percent},
                         {"warn_after_s", seconds(idle.warn_after)},
                         {"stop_after_s", seconds(idle.stop_after)},
                         {"scope", std::string(word_of(idle.scope))},
                         {"exempt_users", idle.exempt_users},
                         {"exempt_containers", idle.exempt_containers},
                         {"dry_run", idle.dry_run}});
  }
  if (p.notify)
    rule("notify", {{"webhook", p.notify->webhook.empty() ? json(nullptr) : json("(set)")},
                    {"mail", p.notify->mail},
                    {"mail_domain", p.notify->mail_domain},
                    {"sendmail", p.notify->sendmail},
                    {"events", p.notify->events}});

  json profiles = json::object();
  for (const auto& [name, where] : config.profiles) {
    profiles[name] = json::array();
    for (const ConfigSource& s : where) profiles[name].push_back(source_json(s));
  }
  json profile = nullptr;
  if (config.profile) profile = {{"name", config.profile->name}, {"chosen_by", config.profile->chosen_by}};

  json files = json::array();
  for (const ConfigFile& f : config.files)
    files.push_back({{"layer", kind_name(f.layer)}, {"path", f.path}, {"state", state_name(f.state)}});

  return {{"keys", keys},         {"policy", policy}, {"profile", profile},
          {"profiles", profiles}, {"files", files},   {"warnings", config.warnings}};
}

}  // namespace gpurun
