#pragma once

// The console's files (ui/), embedded into the broker at build time by ui/build.mjs,
// which generates generated/console_assets.cc in the build directory.

#include <string_view>
#include <vector>

namespace sluice::console {

struct asset {
    std::string_view name;          // "index.html", "app.js", ...
    std::string_view content_type;  // "text/javascript; charset=utf-8"
    std::string_view etag;          // quoted, from the file's hash
    std::string_view data;
    std::string_view gzip;  // the same, gzip-compressed
};

const std::vector<asset>& assets();

}  // namespace sluice::console
