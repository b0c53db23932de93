#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/wire.h"

namespace sluice::protocol {

enum class api_key : int16_t {
    produce = 0,
    fetch = 1,
    list_offsets = 2,
    metadata = 3,
    offset_commit = 8,
    offset_fetch = 9,
    find_coordinator = 10,
    join_group = 11,
    heartbeat = 12,
    leave_group = 13,
    sync_group = 14,
    describe_groups = 15,
    list_groups = 16,
    sasl_handshake = 17,
    describe_configs = 32,
    api_versions = 18,
    create_topics = 19,
    delete_topics = 20,
    delete_records = 21,
    init_producer_id = 22,
    add_partitions_to_txn = 24,
    add_offsets_to_txn = 25,
    end_txn = 26,
    write_txn_markers = 27,
    txn_offset_commit = 28,
    describe_acls = 29,
    create_acls = 30,
    delete_acls = 31,
    alter_configs = 33,
    sasl_authenticate = 36,
    create_partitions = 37,
    delete_groups = 42,
    incremental_alter_configs = 44,
    offset_delete = 47,
    describe_user_scram_credentials = 50,
    alter_user_scram_credentials = 51,
    describe_cluster = 60,
    describe_producers = 61,
    describe_transactions = 65,
    list_transactions = 66,
    consumer_group_heartbeat = 68,
    consumer_group_describe = 69,
    share_group_heartbeat = 76,
    share_group_describe = 77,
    share_fetch = 78,
    share_acknowledge = 79,
    describe_share_group_offsets = 90,
    alter_share_group_offsets = 91,
    delete_share_group_offsets = 92,
};

// The first version of each API that uses flexible encoding (compact types and tagged
// fields), from Kafka's message schemas. It is a property of the protocol, not of what
// this broker supports, so it is known even for versions the broker rejects.
std::optional<int16_t> first_flexible_version(int16_t key);

inline bool is_flexible(int16_t key, int16_t version) {
    auto f = first_flexible_version(key);
    return f && version >= *f;
}

struct request_header {
    int16_t api_key = 0;
    int16_t api_version = 0;
    int32_t correlation_id = 0;
    std::optional<std::string> client_id;
};

// Request header v1 (v2 adds a tag section in flexible versions). client_id stays a
// classic nullable string even in v2.
inline void write_request_header(writer& w, const request_header& h, bool flexible) {
    w.fixed<int16_t>(h.api_key);
    w.fixed<int16_t>(h.api_version);
    w.fixed<int32_t>(h.correlation_id);
    w.nullable_string(h.client_id, false);
    if (flexible) w.uvarint(0);
}

// Reads client_id and, for flexible versions, skips the header's tag section. The
// first three fields are read by the caller to find the API.
inline void read_request_header_rest(reader& r, request_header& h, bool flexible) {
    h.client_id = r.nullable_string(false);
    if (flexible) {
        uint32_t n = r.uvarint();
        for (uint32_t i = 0; i < n && r.ok(); ++i) {
            r.uvarint();
            r.raw(r.uvarint());
        }
    }
}

// Response header v0 is the correlation id; v1 adds a tag section. ApiVersions
// responses always use v0 so that a client can read them before it knows versions.
inline bool response_header_has_tags(int16_t key, int16_t version) {
    return key != static_cast<int16_t>(api_key::api_versions) && is_flexible(key, version);
}

}  // namespace sluice::protocol
