#include "app/sql_state.h"

namespace sluice::app {

std::vector<sql::broker_state::group> sql_state::groups() {
    return on_loop<std::vector<group>>(_b, [this] { return read_groups(_b); });
}

std::vector<sql::broker_state::committed_offset> sql_state::group_offsets() {
    return on_loop<std::vector<committed_offset>>(_b, [this] { return read_group_offsets(_b); });
}

std::vector<sql::broker_state::group> sql_state::read_groups(broker::broker& b) {
    std::vector<group> out;
    auto& c = b.groups();
    for (const auto& l : c.list()) {
        group g;
        g.group_id = l.group_id;
        g.state = std::string(::sluice::group::state_name(l.state));
        g.protocol_type = l.protocol_type;
        if (auto d = c.describe(l.group_id)) {
            g.protocol = d->protocol_name;
            g.members = static_cast<int32_t>(d->members.size());
            g.generation = d->generation;
        }
        out.push_back(std::move(g));
    }
    return out;
}

std::vector<sql::broker_state::committed_offset> sql_state::read_group_offsets(broker::broker& b) {
    std::vector<committed_offset> out;
    auto& c = b.groups();
    for (const auto& l : c.list()) {
        for (const auto& e : c.committed_all(l.group_id)) {
            committed_offset o;
            o.group_id = l.group_id;
            o.topic = e.tp.topic;
            o.partition = e.tp.partition;
            o.offset = e.value.offset;
            o.metadata = e.value.metadata;
            o.commit_ms = e.value.commit_ms;
            out.push_back(std::move(o));
        }
    }
    return out;
}

std::map<std::string, std::string> sql_state::topic_defaults() { return _b.config().topic_defaults; }

}  // namespace sluice::app
