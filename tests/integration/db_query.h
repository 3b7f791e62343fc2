// Reads the LC's SQLite database from a test, read-only, while the LC may be writing it.
#pragma once

#include <string>
#include <vector>

namespace sedna::testing {

using Rows = std::vector<std::vector<std::string>>;

// The rows of `sql` on the database file `db`, every column as its text (NULL as ""; embedded
// NUL bytes kept). Waits up to 5 s for a lock; throws std::runtime_error naming the file or the
// statement when the database cannot be opened or the statement fails at any step.
Rows Query(const std::string& db, const std::string& sql);

}  // namespace sedna::testing
