#include "store/run_ref.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "store/history_store.h"

namespace tokperf {

Result<std::string> resolve_run_ref(const std::string& ref, const std::string& store_path) {
  std::error_code ec;
  if (std::filesystem::is_directory(ref, ec)) return ref;
  std::string digits = !ref.empty() && ref[0] == '#' ? ref.substr(1) : ref;
  bool is_id =
      !digits.empty() && digits.size() < 18 &&
      std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!is_id) {
    return Error{
        fmt::format("run '{}': no such folder; expected a folder written by a tokperf run "
                    "(with summary.json) or a history id such as 12 or #12",
                    ref)};
  }
  const std::string path = store_path.empty() ? default_store_path() : store_path;
  if (!std::filesystem::exists(path, ec)) {
    return Error{
        fmt::format("run '{}': not a folder, and there is no history store at '{}' to "
                    "look the id up in",
                    ref, path)};
  }
  auto store = HistoryStore::open(path);
  if (!store) return Error{store.error()};
  auto entry = (*store)->get(std::stoll(digits));
  if (!entry) return Error{fmt::format("run '{}': {}", ref, entry.error())};
  if (!std::filesystem::is_directory(entry->dir, ec)) {
    return Error{fmt::format("run '{}': history says its folder was '{}', which no longer exists",
                             ref, entry->dir)};
  }
  return entry->dir;
}

}  // namespace tokperf
