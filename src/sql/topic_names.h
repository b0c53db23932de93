#pragma once

// How topic names become table names in kafka_topics, and back (docs/sql.md, "Topic
// names that SQL folds or reserves").
//
// Kafka topic names are case-sensitive ([a-zA-Z0-9._-], up to 249 characters), while
// SQLite compares table names without case and reserves those starting with "sqlite_".
// A topic whose name SQLite could confuse with another visible topic's, or that SQLite
// reserves, gets an escaped table name: '~', then the name with '^' before each
// upper-case letter ("CaseT" -> "~^Case^T", "sqlite_events" -> "~sqlite_events").
// Neither '~' nor '^' occurs in a topic name, so escaped names never meet plain ones,
// two topics never share one (case marks stay where the letters differ), and no
// escaped name is reserved. Statements name topics as users know them: a session
// rewrites kafka_topics.<name> to the escaped table (rewrite_topic_refs).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::sql {

// Whether SQLite reserves `name` for itself ("sqlite_" in any case).
bool reserved_table_name(std::string_view name);
// The escaped table name of `topic`.
std::string escaped_table_name(std::string_view topic);
// The topic a kafka_topics table stands for: the name itself, or the escaped one's
// topic.
std::string topic_of_table(std::string_view table);

// One replaced identifier: [from, to) of the original text became [new_from, new_to).
struct text_edit {
    size_t from = 0, to = 0, new_from = 0, new_to = 0;
};

// The SQL text with every reference kafka_topics.<name> (either part quoted with "",
// `` or [], or bare; comments between the parts allowed) whose <name> `table_for`
// maps to another table name replaced by that name, quoted, up to the first ';' (the
// end of the statement SQLite prepares next). String literals and comments are left
// alone. `edits` (when given) receives the replacements, in order.
std::string rewrite_topic_refs(
    std::string_view sql,
    const std::function<std::optional<std::string>(std::string_view name)>& table_for,
    std::vector<text_edit>* edits = nullptr);
// The position in the original text of position `pos` of the rewritten one.
size_t original_position(const std::vector<text_edit>& edits, size_t pos);

}  // namespace sluice::sql
