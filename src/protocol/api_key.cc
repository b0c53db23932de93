#include "protocol/api_key.h"

namespace sluice::protocol {

std::optional<int16_t> first_flexible_version(int16_t key) {
    switch (static_cast<api_key>(key)) {
        case api_key::produce: return 9;
        case api_key::fetch: return 12;
        case api_key::list_offsets: return 6;
        case api_key::metadata: return 9;
        case api_key::describe_configs: return 4;
        case api_key::api_versions: return 3;
        case api_key::create_topics: return 5;
        case api_key::delete_topics: return 4;
        case api_key::describe_cluster: return 0;
        case api_key::offset_commit: return 8;
        case api_key::offset_fetch: return 6;
        case api_key::find_coordinator: return 3;
        case api_key::join_group: return 6;
        case api_key::heartbeat: return 4;
        case api_key::leave_group: return 4;
        case api_key::sync_group: return 4;
        case api_key::describe_groups: return 5;
        case api_key::list_groups: return 3;
        case api_key::delete_groups: return 2;
        case api_key::offset_delete: return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace sluice::protocol
