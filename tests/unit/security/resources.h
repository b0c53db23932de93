#pragma once

// Resources by kind and name, for the security tests.

#include <string>
#include <utility>

#include "security/policy.h"

namespace sluice::security::test {

inline resource topic(std::string name) {
    return {resource_kind::topic, std::move(name)};
}
inline resource group(std::string name) {
    return {resource_kind::group, std::move(name)};
}
inline resource transactional_id(std::string name) {
    return {resource_kind::transactional_id, std::move(name)};
}

}  // namespace sluice::security::test
