#pragma once

#include <span>
#include <string_view>

#include "broker/request_context.h"
#include "protocol/api_key.h"

namespace sluice::broker {

using handler_fn = void (*)(const request_context& ctx, request_body body);

// One row per supported API: ApiVersions answers from this table and dispatch rejects
// a version outside it before any handler runs. docs/compatibility.md publishes it.
struct api_def {
    protocol::api_key key;
    std::string_view name;
    int16_t min_version;
    int16_t max_version;
    handler_fn handle;
};

std::span<const api_def> supported_apis();
const api_def* find_api(int16_t key);
// Whether a broker in shared mode serves the API: ApiVersions leaves the others out, and a
// request for one is answered UNSUPPORTED_VERSION with a log line saying why.
bool served_in_shared_mode(protocol::api_key k);

}  // namespace sluice::broker
