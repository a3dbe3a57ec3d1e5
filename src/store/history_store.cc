#include "store/history_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

namespace tokperf {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBusyTimeoutMs = 30000;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  recorded_unix_us INTEGER NOT NULL,
  started_unix_us INTEGER,
  command TEXT, dir TEXT, label TEXT, model TEXT, base_url TEXT, tokperf_version TEXT,
  levels INTEGER, sent INTEGER, failed INTEGER,
  ttft_p50_ms REAL, ttft_p95_ms REAL, tpot_p50_ms REAL, tpot_p95_ms REAL, out_tok_s REAL,
  config_json TEXT, summary_json TEXT);
CREATE TABLE IF NOT EXISTS levels(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
  label TEXT, concurrency INTEGER, target_rate_rps REAL, sent INTEGER, ok INTEGER, failed INTEGER,
  ttft_p50_ms REAL, ttft_p95_ms REAL, tpot_p50_ms REAL, tpot_p95_ms REAL, itl_p50_ms REAL,
  itl_p99_ms REAL, e2e_p50_ms REAL, e2e_p95_ms REAL, out_tok_s REAL,
  PRIMARY KEY(run_id, idx));
)sql";

std::string err(sqlite3* db, const std::string& what) {
  return fmt::format("history store: {}: {}", what, sqlite3_errmsg(db));
}

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt* get() const { return s_; }
  bool ok() const { return s_ != nullptr; }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) {
    if (std::isfinite(v))
      sqlite3_bind_double(s_, i, v);
    else
      sqlite3_bind_null(s_, i);
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

double pick(const json& j, const char* metric, const char* stat) {
  if (!j.contains(metric) || !j[metric].is_object()) return kNaN;
  const json& m = j[metric];
  return m.contains(stat) && m[stat].is_number() ? m[stat].get<double>() : kNaN;
}

double tput(const json& l) {
  if (!l.contains("throughput") || !l["throughput"].is_object()) return kNaN;
  const json& t = l["throughput"];
  return t.contains("output_tokens_per_s") && t["output_tokens_per_s"].is_number()
             ? t["output_tokens_per_s"].get<double>()
             : kNaN;
}

int64_t req(const json& l, const char* k) {
  if (!l.contains("requests") || !l["requests"].is_object()) return 0;
  return l["requests"].value(k, int64_t{0});
}

std::string text_at(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].is_object()) return "";
  const json& o = j[a];
  return o.contains(b) && o[b].is_string() ? o[b].get<std::string>() : "";
}

double col_double(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? kNaN : sqlite3_column_double(s, i);
}
std::string col_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

constexpr const char* kEntryColumns =
    "id, recorded_unix_us, started_unix_us, command, dir, label, model, base_url, levels, sent, "
    "failed, ttft_p50_ms, ttft_p95_ms, tpot_p50_ms, tpot_p95_ms, out_tok_s";

HistoryEntry entry_from_row(sqlite3_stmt* s) {
  HistoryEntry e;
  e.id = sqlite3_column_int64(s, 0);
  e.recorded_unix_us = sqlite3_column_int64(s, 1);
  e.started_unix_us = sqlite3_column_int64(s, 2);
  e.command = col_text(s, 3);
  e.dir = col_text(s, 4);
  e.label = col_text(s, 5);
  e.model = col_text(s, 6);
  e.base_url = col_text(s, 7);
  e.levels = sqlite3_column_int64(s, 8);
  e.sent = sqlite3_column_int64(s, 9);
  e.failed = sqlite3_column_int64(s, 10);
  e.ttft_p50_ms = col_double(s, 11);
  e.ttft_p95_ms = col_double(s, 12);
  e.tpot_p50_ms = col_double(s, 13);
  e.tpot_p95_ms = col_double(s, 14);
  e.out_tok_s = col_double(s, 15);
  return e;
}

}  // namespace

std::string default_store_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/tokperf/history.db";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/share/tokperf/history.db";
}

Result<std::unique_ptr<HistoryStore>> HistoryStore::open(const std::string& path) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec)
    return Error{
        fmt::format("history store: cannot create folder '{}': {}", parent.string(), ec.message())};
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<HistoryStore> store(new HistoryStore(db));
  if (rc != SQLITE_OK) return Error{err(db, fmt::format("cannot open '{}'", path))};
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // WAL lets readers run beside one writer; the busy timeout makes concurrent writers wait their
  // turn instead of failing with SQLITE_BUSY. Switching a new file to WAL can report SQLITE_BUSY
  // without consulting the busy handler while another process is doing the same, so the set-up is
  // retried until the busy timeout has passed.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 0;; ++attempt) {
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) break;
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) ||
        std::chrono::steady_clock::now() > deadline) {
      return Error{err(db, fmt::format("cannot set up '{}'", path))};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + (attempt % 10) * 5));
  }
  sqlite3_exec(db, "PRAGMA foreign_keys=ON", nullptr, nullptr, nullptr);
  return store;
}

HistoryStore::~HistoryStore() { sqlite3_close(db_); }

Result<int64_t> HistoryStore::record(const json& summary, const std::string& dir,
                                     const std::string& label) {
  const json levels = summary.value("levels", json::array());
  const json config = summary.value("config", json::object());
  const json head = levels.empty() ? json::object() : levels.back();
  int64_t sent = 0, failed = 0;
  for (const json& l : levels) sent += req(l, "sent"), failed += req(l, "failed");
  int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
    return Error{err(db_, "cannot start a transaction")};
  auto fail = [&](const std::string& what) -> Result<int64_t> {
    std::string e = err(db_, what);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return Error{e};
  };
  {
    Stmt s(db_,
           "INSERT INTO runs(recorded_unix_us, started_unix_us, command, dir, label, model, "
           "base_url, tokperf_version, levels, sent, failed, ttft_p50_ms, ttft_p95_ms, "
           "tpot_p50_ms, tpot_p95_ms, out_tok_s, config_json, summary_json) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return fail("cannot prepare insert");
    s.bind(1, now_us);
    s.bind(2, summary.value("started_unix_us", int64_t{0}));
    s.bind(3, summary.value("command", std::string()));
    s.bind(4, dir);
    s.bind(5, label);
    s.bind(6, text_at(config, "target", "model"));
    s.bind(7, text_at(config, "target", "base_url"));
    s.bind(8, summary.value("tokperf_version", std::string()));
    s.bind(9, static_cast<int64_t>(levels.size()));
    s.bind(10, sent);
    s.bind(11, failed);
    s.bind(12, pick(head, "ttft_ms", "p50"));
    s.bind(13, pick(head, "ttft_ms", "p95"));
    s.bind(14, pick(head, "tpot_ms", "p50"));
    s.bind(15, pick(head, "tpot_ms", "p95"));
    s.bind(16, tput(head));
    s.bind(17, config.dump());
    s.bind(18, summary.dump());
    if (sqlite3_step(s.get()) != SQLITE_DONE) return fail("cannot insert run");
  }
  int64_t id = sqlite3_last_insert_rowid(db_);
  for (size_t i = 0; i < levels.size(); ++i) {
    const json& l = levels[i];
    Stmt s(db_, "INSERT INTO levels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return fail("cannot prepare level insert");
    s.bind(1, id);
    s.bind(2, static_cast<int64_t>(i));
    s.bind(3, l.value("label", std::string()));
    s.bind(4, l.contains("concurrency") && l["concurrency"].is_number()
                  ? l["concurrency"].get<int64_t>()
                  : int64_t{0});
    s.bind(5, l.contains("target_rate_rps") && l["target_rate_rps"].is_number()
                  ? l["target_rate_rps"].get<double>()
                  : kNaN);
    s.bind(6, req(l, "sent"));
    s.bind(7, req(l, "ok"));
    s.bind(8, req(l, "failed"));
    s.bind(9, pick(l, "ttft_ms", "p50"));
    s.bind(10, pick(l, "ttft_ms", "p95"));
    s.bind(11, pick(l, "tpot_ms", "p50"));
    s.bind(12, pick(l, "tpot_ms", "p95"));
    s.bind(13, pick(l, "itl_ms", "p50"));
    s.bind(14, pick(l, "itl_ms", "p99"));
    s.bind(15, pick(l, "e2e_ms", "p50"));
    s.bind(16, pick(l, "e2e_ms", "p95"));
    s.bind(17, tput(l));
    if (sqlite3_step(s.get()) != SQLITE_DONE) return fail("cannot insert level");
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
    return fail("cannot commit");
  return id;
}

Result<std::vector<HistoryEntry>> HistoryStore::list(const HistoryFilter& f) {
  std::string sql = fmt::format(
      "SELECT {} FROM runs WHERE (?1 = '' OR command = ?1) AND (?2 = '' OR instr(label, ?2) OR "
      "instr(model, ?2) OR instr(base_url, ?2) OR instr(dir, ?2)) AND recorded_unix_us >= ?3 "
      "ORDER BY id DESC LIMIT ?4",
      kEntryColumns);
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return Error{err(db_, "cannot prepare query")};
  s.bind(1, f.command);
  s.bind(2, f.contains);
  s.bind(3, f.since_unix_us);
  s.bind(4, f.limit);
  std::vector<HistoryEntry> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(entry_from_row(s.get()));
  if (rc != SQLITE_DONE) return Error{err(db_, "query failed")};
  return out;
}

Result<HistoryEntry> HistoryStore::get(int64_t id) {
  std::string sql = fmt::format("SELECT {} FROM runs WHERE id = ?", kEntryColumns);
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return Error{err(db_, "cannot prepare query")};
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW)
    return Error{fmt::format("history store: no run with id {} (see `tokperf history`)", id)};
  return entry_from_row(s.get());
}

Result<json> HistoryStore::summary(int64_t id) {
  Stmt s(db_, "SELECT summary_json FROM runs WHERE id = ?");
  if (!s.ok()) return Error{err(db_, "cannot prepare query")};
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW)
    return Error{fmt::format("history store: no run with id {} (see `tokperf history`)", id)};
  json j = json::parse(col_text(s.get(), 0), nullptr, false);
  if (j.is_discarded())
    return Error{fmt::format("history store: run {} has a corrupt summary", id)};
  return j;
}

Result<int64_t> record_run_in_history(const std::string& dir, const std::string& store_path,
                                      const std::string& label) {
  std::ifstream f(dir + "/summary.json");
  if (!f) return Error{fmt::format("cannot read '{}/summary.json'", dir)};
  std::stringstream ss;
  ss << f.rdbuf();
  json summary = json::parse(ss.str(), nullptr, false);
  if (!summary.is_object())
    return Error{fmt::format("'{}/summary.json' is not a JSON object", dir)};
  auto store = HistoryStore::open(store_path.empty() ? default_store_path() : store_path);
  if (!store) return Error{store.error()};
  std::error_code ec;
  std::string abs = std::filesystem::absolute(dir, ec).lexically_normal().string();
  return (*store)->record(summary, ec ? dir : abs, label);
}

}  // namespace tokperf
