#include "db_query.h"

#include <sqlite3.h>

#include <stdexcept>

namespace sedna::testing {

Rows Query(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string e = h ? sqlite3_errmsg(h) : "out of memory";
    sqlite3_close(h);
    throw std::runtime_error("open " + db + ": " + e);
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string e = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error(sql + ": " + e);
  }
  Rows rows;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      row.emplace_back(t ? std::string(t, sqlite3_column_bytes(st, i)) : std::string());
    }
    rows.push_back(std::move(row));
  }
  std::string e = rc == SQLITE_DONE ? "" : sqlite3_errmsg(h);
  sqlite3_finalize(st);
  sqlite3_close(h);
  if (!e.empty()) throw std::runtime_error(sql + ": " + e);
  return rows;
}

}  // namespace sedna::testing
