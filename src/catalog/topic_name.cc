#include "catalog/topic_name.h"

#include <fmt/format.h>

namespace sluice::catalog {
namespace {

bool legal_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

}  // namespace

result<void> validate_topic_name(std::string_view name) {
    if (name.empty()) return {errc::invalid_argument, "topic name is empty"};
    if (name == "." || name == "..") {
        return {errc::invalid_argument, fmt::format("topic name cannot be '{}'", name)};
    }
    if (name.size() > max_topic_name_length) {
        return {errc::invalid_argument,
                fmt::format("topic name is {} characters long; the limit is {}", name.size(),
                            max_topic_name_length)};
    }
    for (size_t i = 0; i < name.size(); ++i) {
        if (!legal_char(name[i])) {
            // The byte is printed as hex: it may be part of a multi-byte character or a
            // control character that would garble the message.
            return {errc::invalid_argument,
                    fmt::format("topic name contains an illegal character (byte 0x{:02x} at "
                                "position {}); allowed are ASCII letters, digits, '.', '_' "
                                "and '-'",
                                static_cast<uint8_t>(name[i]), i)};
        }
    }
    return {};
}

}  // namespace sluice::catalog
