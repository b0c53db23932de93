#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::broker {

// IncrementalAlterConfigs changes only the keys it names: SET, DELETE (back to the
// default), APPEND and SUBTRACT (list-valued keys such as cleanup.policy).
void handle_incremental_alter_configs(const request_context& ctx, request_body body) {
    protocol::incremental_alter_configs_request req;
    if (!decode_request(ctx, body, req)) return;
    respond_config_changes(ctx, req, [](const auto& r, config_change& change) {
        for (const auto& c : r.configs) {
            if (!change.seen.insert(c.name).second) change.duplicate = c.name;
            change.ops.push_back({c.name, c.config_operation, c.value});
        }
    });
}

}  // namespace sluice::broker
