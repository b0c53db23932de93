#pragma once

// A buffered_reader over a string, for tests of what the HTTP code reads.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "sql/http/http_message.h"

namespace sluice::sql::http::test {

// A reader over `text`, handing out at most `piece` bytes per read (1 splits every
// CRLF across reads).
inline buffered_reader reader_of(std::string text, size_t piece = 1 << 20) {
    auto src = std::make_shared<std::pair<std::string, size_t>>(std::move(text), 0);
    return buffered_reader([src, piece](char* buf, size_t n) {
        size_t take = std::min({n, piece, src->first.size() - src->second});
        std::memcpy(buf, src->first.data() + src->second, take);
        src->second += take;
        return take;
    });
}

}  // namespace sluice::sql::http::test
