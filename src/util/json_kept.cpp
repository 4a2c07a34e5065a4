#include "gpurun/util/json_kept.hpp"

// Boost.JSON compiled here, header-only, from the Boost headers the engine client already uses.
#include <boost/json/src.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpurun {
namespace {

using nlohmann::json;

// Deeper than any engine's answer (theirs nest about six levels). Boost.JSON's parser recurses
// once per level, so it is given no more; deeper text goes to nlohmann's, which takes any depth.
constexpr std::size_t kMaxDepth = 64;

// `value` as nlohmann's JSON (what the readers take), all of it; with a stack of its own.
json copied(const boost::json::value& value) {
  json out;
  std::vector<std::pair<const boost::json::value*, json*>> pending{{&value, &out}};
  while (!pending.empty()) {
    const auto [from, to] = pending.back();
    pending.pop_back();
    switch (from->kind()) {
      case boost::json::kind::null:
        *to = nullptr;
        break;
      case boost::json::kind::bool_:
        *to = from->get_bool();
        break;
      case boost::json::kind::int64:  // nlohmann's parser types a number that is not negative unsigned
        if (from->get_int64() >= 0)
          *to = static_cast<std::uint64_t>(from->get_int64());
        else
          *to = from->get_int64();
        break;
      case boost::json::kind::uint64:
        *to = from->get_uint64();
        break;
      case boost::json::kind::double_:
        *to = from->get_double();
        break;
      case boost::json::kind::string:
        *to = std::string(from->get_string());
        break;
      case boost::json::kind::array: {
        const boost::json::array& elements = from->get_array();
        *to = json::array();
        to->get_ref<json::array_t&>().resize(elements.size());  // sized first: the pointers below stay
        for (std::size_t i = 0; i < elements.size(); ++i) pending.emplace_back(&elements[i], &(*to)[i]);
        break;
      }
      case boost::json::kind::object:
        *to = json::object();
        for (const auto& member : from->get_object())
          pending.emplace_back(&member.value(), &(*to)[std::string(member.key())]);
        break;
    }
  }
  return out;
}

// Of `element`, only the members on the way to and under `paths`; a value on the way that is no
// object is kept whole.
json kept(const boost::json::value& element, const std::vector<std::vector<std::string>>& paths) {
  if (!element.is_object()) return copied(element);
  json out = json::object();
  for (const auto& path : paths) {
    const boost::json::value* from = &element;
    json* to = &out;
    for (const std::string& key : path) {
      if (!from->is_object()) break;
      const boost::json::value* next = from->get_object().if_contains(key);
      if (next == nullptr) break;
      from = next;
      to = &(*to)[key];
      if (&key == &path.back() || !from->is_object()) {
        *to = copied(*from);
        break;
      }
      if (!to->is_object()) *to = json::object();
    }
  }
  return out;
}

std::vector<std::vector<std::string>> split_paths(std::span<const std::string_view> paths) {
  std::vector<std::vector<std::string>> split;
  for (std::string_view path : paths) {
    std::vector<std::string> keys;
    while (path.starts_with('/')) {
      path.remove_prefix(1);
      const std::size_t end = path.find('/');
      keys.emplace_back(path.substr(0, end));
      path = end == std::string_view::npos ? std::string_view() : path.substr(end);
    }
    split.push_back(std::move(keys));
  }
  return split;
}

}  // namespace

nlohmann::json parse_json_keeping(std::string_view text, std::span<const std::string_view> paths) {
  boost::json::monotonic_resource memory;  // one arena for the whole answer, released at once
  boost::json::parse_options options;
  options.max_depth = kMaxDepth;
  boost::system::error_code error;
  const boost::json::value parsed =
      boost::json::parse(boost::json::string_view(text.data(), text.size()), error, &memory, options);
  if (error == boost::json::error::too_deep) return json::parse(text, nullptr, false);  // all of it: rare enough
  if (error) return json(json::value_t::discarded);
  const auto split = split_paths(paths);
  if (!parsed.is_array()) return kept(parsed, split);
  json out = json::array();
  for (const boost::json::value& element : parsed.get_array()) out.push_back(kept(element, split));
  return out;
}

}  // namespace gpurun
