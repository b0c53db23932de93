// Names of users' schemas (sql/schema_names.h): what CREATE SCHEMA and the copy of an
// older data directory's schema files accept.

#include <gtest/gtest.h>

#include <string>

#include "sql/schema_names.h"

namespace sluice::sql {
namespace {

TEST(schema_names, letters_digits_and_underscores_not_the_engines_own) {
    for (const std::string ok : {"shop", "S_2", "_x"}) EXPECT_EQ(check_schema_name(ok), "") << ok;
    EXPECT_EQ(check_schema_name(std::string(63, 'a')), "");
    EXPECT_EQ(check_schema_name(""), "a schema name has 1 to 63 characters");
    EXPECT_EQ(check_schema_name(std::string(64, 'a')), "a schema name has 1 to 63 characters");
    EXPECT_EQ(check_schema_name("2x"), "a schema name does not start with a digit");
    EXPECT_EQ(check_schema_name("a-b"), "a schema name holds only letters, digits and '_'");
    EXPECT_EQ(check_schema_name("Kafka_Topics"), "schema kafka_topics belongs to the engine");
    EXPECT_EQ(check_schema_name("SYSTEM"), "schema system belongs to the engine");
}

}  // namespace
}  // namespace sluice::sql
