#include "common/version.h"

#include "version_info.h"  // generated into the build tree by cmake/version.cmake

namespace sluice {

std::string_view version() {
    return SLUICE_VERSION_TEXT;
}

std::string_view build_commit() {
    return SLUICE_COMMIT_TEXT;
}

}  // namespace sluice
