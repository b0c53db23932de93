#pragma once

// What AlterConfigs and IncrementalAlterConfigs share: turning a requested change into a
// topic's new config set, validating it, and applying it.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/request_context.h"
#include "protocol/messages/alter_configs.h"

namespace sluice::broker {

struct config_change {
    struct op {
        std::string name;
        int8_t operation = 0;  // protocol::config_op_*
        std::optional<std::string> value;
    };
    bool replace_all = false;                    // AlterConfigs
    std::map<std::string, std::string> replace;  // AlterConfigs: the whole new set
    std::vector<op> ops;                         // IncrementalAlterConfigs
    std::set<std::string> seen;
    std::optional<std::string> duplicate;  // a key named twice: INVALID_REQUEST
};

void apply_config_change(const request_context& ctx, int8_t resource_type,
                         const std::string& resource_name, const config_change& change,
                         bool validate_only, protocol::alter_configs_response::result& out);

// Answers an (Incremental)AlterConfigs request: to_change(resource, change) describes
// each resource's change, which is then validated and applied on its own.
template <typename Req, typename ToChange>
void respond_config_changes(const request_context& ctx, const Req& req, ToChange to_change) {
    protocol::alter_configs_response resp;
    for (const auto& r : req.resources) {
        auto& out = resp.responses.emplace_back();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name;
        config_change change;
        to_change(r, change);
        apply_config_change(ctx, r.resource_type, r.resource_name, change, req.validate_only, out);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
