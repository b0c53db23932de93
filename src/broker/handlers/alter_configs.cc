#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

// AlterConfigs replaces a topic's whole config set: keys left out return to defaults.
void handle_alter_configs(const request_context& ctx, request_body body) {
    protocol::alter_configs_request req;
    if (!decode_request(ctx, body, req)) return;
    respond_config_changes(ctx, req, [](const auto& r, config_change& change) {
        change.replace_all = true;
        for (const auto& c : r.configs) {
            if (!change.seen.insert(c.name).second) change.duplicate = c.name;
            if (c.value) change.replace[c.name] = *c.value;  // null: the default
        }
    });
}

}  // namespace sluice::broker
