#pragma once

// Where `sluice user add/passwd` get a password: typed at a terminal without echo (twice,
// so a typo cannot become the password), or the first line of a non-terminal stdin,
// for scripts (`echo PW | sluice user add NAME ...`).

#include <string>

#include "common/result.h"

namespace sluice::app {

// `what` names the password in the prompt ("new password for alice").
result<std::string> read_new_password(const std::string& what);

}  // namespace sluice::app
