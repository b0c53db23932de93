#include "sql/schema_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace sluice::sql {

std::string check_schema_name(const std::string& name) {
    if (name.empty() || name.size() > 63) return "a schema name has 1 to 63 characters";
    if (std::isdigit(static_cast<unsigned char>(name[0])))
        return "a schema name does not start with a digit";
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return "a schema name holds only letters, digits and '_'";
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* reserved : {"main", "temp", "kafka_topics", "system", "pg_catalog",
                                 "information_schema"})
        if (lower == reserved) return fmt::format("schema {} belongs to the engine", reserved);
    return {};
}

}  // namespace sluice::sql
