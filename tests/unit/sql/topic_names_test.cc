// Topic names that SQLite folds or reserves: each topic its own table, named in
// statements as Kafka spells it (sql/topic_names.h).

#include <gtest/gtest.h>

#include <map>

#include "sql/sql_text.h"
#include "sql/topic_names.h"
#include "sql_test_util.h"

namespace sluice::sql::test {
namespace {

using rows = std::vector<std::vector<std::string>>;

TEST(topic_names, escaped_names_are_distinct_unreserved_and_reversible) {
    EXPECT_EQ(escaped_table_name("CaseT"), "~^Case^T");
    EXPECT_EQ(escaped_table_name("caset"), "~caset");
    EXPECT_NE(to_lower(escaped_table_name("CaseT")), to_lower(escaped_table_name("caset")));
    EXPECT_EQ(escaped_table_name("sqlite_events"), "~sqlite_events");
    EXPECT_FALSE(reserved_table_name(escaped_table_name("SQLITE_x")));
    for (const char* t : {"CaseT", "caset", "sqlite_events", "a.b-c_9", "9lives", "x"}) {
        EXPECT_EQ(topic_of_table(escaped_table_name(t)), t);
        EXPECT_EQ(topic_of_table(t), t);
    }
    EXPECT_TRUE(reserved_table_name("SQLite_Events"));
    EXPECT_FALSE(reserved_table_name("sqlite"));
}

TEST(topic_names, rewrite_touches_only_kafka_topics_references) {
    const std::map<std::string, std::string, std::less<>> tables{{"CaseT", "~^Case^T"},
                                                                 {"caset", "~caset"}};
    auto table_for = [&](std::string_view n) -> std::optional<std::string> {
        auto it = tables.find(n);
        if (it == tables.end()) return std::nullopt;
        return it->second;
    };
    std::vector<text_edit> edits;
    const std::string sql =
        "SELECT 'kafka_topics.\"CaseT\"', t.value FROM kafka_topics.\"CaseT\" t "
        "JOIN KAFKA_TOPICS . /* c */ caset u USING (offset) -- kafka_topics.caset\n"
        "WHERE \"CaseT\" = 1; SELECT 2";
    const auto out = rewrite_topic_refs(sql, table_for, &edits);
    EXPECT_EQ(out,
              "SELECT 'kafka_topics.\"CaseT\"', t.value FROM kafka_topics.\"~^Case^T\" t "
              "JOIN KAFKA_TOPICS . /* c */ \"~caset\" u USING (offset) -- kafka_topics.caset\n"
              "WHERE \"CaseT\" = 1; SELECT 2");
    ASSERT_EQ(edits.size(), 2u);
    // Positions after the edits map back to the same text in the original.
    const auto at_new = out.find("; SELECT 2");
    EXPECT_EQ(original_position(edits, at_new), sql.find("; SELECT 2"));
    EXPECT_EQ(original_position(edits, 3), 3u);
    // Nothing to rewrite: the text comes back as it was.
    EXPECT_EQ(rewrite_topic_refs("SELECT * FROM kafka_topics.other", table_for),
              "SELECT * FROM kafka_topics.other");
    // Only the first statement: the session prepares one at a time.
    EXPECT_EQ(rewrite_topic_refs("SELECT 1; SELECT * FROM kafka_topics.caset", table_for),
              "SELECT 1; SELECT * FROM kafka_topics.caset");
    EXPECT_EQ(rewrite_topic_refs("SELECT x'00' FROM kafka_topics.[CaseT]", table_for),
              "SELECT x'00' FROM kafka_topics.\"~^Case^T\"");
}

}  // namespace
}  // namespace sluice::sql::test
