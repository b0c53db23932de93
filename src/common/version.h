#pragma once

// The version this binary is (CMakeLists.txt's project()) and the commit it was built
// from (`git describe`, "-dirty" with uncommitted changes, "unknown" without git).

#include <string_view>

namespace sluice {

std::string_view version();
std::string_view build_commit();

}  // namespace sluice
