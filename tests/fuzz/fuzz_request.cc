// libFuzzer target: Kafka request bodies. The first two bytes choose the API and the
// version; the rest is decoded with that message's declaration. Whatever decodes must
// encode and decode again to the same bytes (the declaration is one truth for both).

#include <cstddef>
#include <cstdint>

#include "protocol/api_key.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_cluster.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/metadata.h"
#include "protocol/messages/produce.h"

namespace p = sluice::protocol;

namespace {

template <typename M>
void check(p::api_key key, int16_t version, sluice::bytes_view body) {
    bool flex = p::is_flexible(static_cast<int16_t>(key), version);
    M m;
    if (!p::decode_message(body, version, flex, m)) return;
    sluice::bytes once;
    p::encode_message(once, version, flex, m);
    M again;
    if (!p::decode_message(once, version, flex, again)) __builtin_trap();
    sluice::bytes twice;
    p::encode_message(twice, version, flex, again);
    if (once != twice) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    sluice::bytes_view body(data + 2, size - 2);
    switch (data[0] % 9) {
        case 0: check<p::produce_request>(p::api_key::produce, 3 + data[1] % 7, body); break;
        case 1: check<p::fetch_request>(p::api_key::fetch, 4 + data[1] % 10, body); break;
        case 2: check<p::list_offsets_request>(p::api_key::list_offsets, data[1] % 9, body); break;
        case 3: check<p::metadata_request>(p::api_key::metadata, data[1] % 13, body); break;
        case 4: check<p::api_versions_request>(p::api_key::api_versions, data[1] % 4, body); break;
        case 5: check<p::create_topics_request>(p::api_key::create_topics, data[1] % 8, body); break;
        case 6: check<p::delete_topics_request>(p::api_key::delete_topics, data[1] % 7, body); break;
        case 7:
            check<p::describe_cluster_request>(p::api_key::describe_cluster, data[1] % 2, body);
            break;
        default:
            check<p::describe_configs_request>(p::api_key::describe_configs, data[1] % 5, body);
            break;
    }
    return 0;
}
