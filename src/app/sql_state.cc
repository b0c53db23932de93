#include "app/sql_state.h"

#include "common/logging.h"
#include "group/consumer_protocol.h"

namespace sluice::app {
namespace {

// "orders,payments", as system.group_members shows subscriptions.
std::string join_topics(const std::vector<std::string>& topics) {
    std::string out;
    for (const auto& t : topics) out += (out.empty() ? "" : ",") + t;
    return out;
}

}  // namespace

std::vector<sql::broker_state::group> sql_state::groups() {
    return on_loop<std::vector<group>>(_b, [this] { return read_groups(_b); });
}

std::vector<sql::broker_state::committed_offset> sql_state::group_offsets() {
    if (_offsets) {
        std::lock_guard lk(_offsets_mu);
        auto stored = _offsets->load();
        if (!stored) {
            log_warn("sql", "system.group_offsets: {}", stored.err().message);
            return {};
        }
        std::vector<committed_offset> out;
        for (auto& o : *stored)
            out.push_back({o.group_id, o.topic, o.partition, o.offset, o.metadata, o.commit_ms});
        return out;
    }
    return on_loop<std::vector<committed_offset>>(_b, [this] { return read_group_offsets(_b); });
}

std::vector<sql::broker_state::group_member> sql_state::group_members() {
    return on_loop<std::vector<group_member>>(_b, [this] { return read_group_members(_b); });
}

std::vector<sql::broker_state::share_partition> sql_state::share_groups() {
    // The windows are read where the share coordinator's work runs (off the loop in
    // shared mode): the loop only starts the read and answers.
    auto done = std::make_shared<std::promise<std::vector<share_partition>>>();
    auto f = done->get_future();
    _b.loop().post([this, done] {
        read_share_groups(_b, [done](std::vector<share_partition> rows) {
            done->set_value(std::move(rows));
        });
    });
    if (f.wait_for(loop_wait) != std::future_status::ready) return {};
    return f.get();
}

void sql_state::read_share_groups(broker::broker& b,
                                  std::function<void(std::vector<share_partition>)> done) {
    b.share_groups().partitions([&b, done = std::move(done)](
                                    const std::vector<::sluice::group::share::partition_description>&
                                        parts) {
        std::vector<share_partition> out;
        auto& sg = b.share_groups();
        for (const auto& id : sg.list()) {
            auto d = sg.describe(id);
            if (!d) continue;
            share_partition base;
            base.group_id = id;
            base.state = d->state;
            base.members = static_cast<int32_t>(d->members.size());
            base.group_epoch = d->group_epoch;
            bool any = false;
            for (const auto& p : parts) {
                if (p.group_id != id) continue;
                share_partition r = base;
                r.topic = p.partition.first;
                r.partition = p.partition.second;
                r.start_offset = p.start_offset;
                r.end_offset = p.end_offset;
                r.in_flight = static_cast<int64_t>(p.in_flight);
                r.acquired = static_cast<int64_t>(p.acquired);
                out.push_back(std::move(r));
                any = true;
            }
            if (!any) out.push_back(std::move(base));
        }
        done(std::move(out));
    });
}

std::vector<sql::broker_state::group_member> sql_state::read_group_members(broker::broker& b) {
    std::vector<group_member> out;
    auto& cg = b.consumer_groups();
    for (const auto& l : cg.list()) {
        auto d = cg.describe(l.group_id);
        if (!d) continue;
        for (const auto& m : d->members) {
            group_member r;
            r.group_id = d->group_id;
            r.type = "consumer";
            r.member_id = m.member_id;
            r.instance_id = m.instance_id;
            r.client_id = m.client_id;
            r.client_host = m.client_host;
            r.epoch = m.member_epoch;
            r.subscribed_topics = join_topics(m.subscribed_topics);
            r.subscribed_regex = m.subscribed_regex;
            r.assigned = ::sluice::group::format_partitions(m.assigned);
            r.target = ::sluice::group::format_partitions(m.target);
            out.push_back(std::move(r));
        }
    }
    auto& c = b.groups();
    for (const auto& l : c.list()) {
        if (cg.is_consumer_group(l.group_id)) continue;
        auto d = c.describe(l.group_id);
        if (!d) continue;
        for (const auto& m : d->members) {
            group_member r;
            r.group_id = d->group_id;
            r.type = "classic";
            r.member_id = m.member_id;
            r.instance_id = m.instance_id;
            r.client_id = m.client_id;
            r.client_host = m.client_host;
            r.epoch = d->generation;
            // A consumer's subscription and assignment are ConsumerProtocol bytes; other
            // protocol types (Connect, ...) stay opaque.
            if (d->protocol_type == "consumer") {
                if (auto topics = ::sluice::group::subscribed_topics(m.metadata))
                    r.subscribed_topics = join_topics(*topics);
                if (auto parts = ::sluice::group::assigned_partitions(m.assignment))
                    r.assigned = ::sluice::group::format_partitions(*parts);
            }
            out.push_back(std::move(r));
        }
    }
    return out;
}

std::vector<sql::broker_state::group> sql_state::read_groups(broker::broker& b) {
    std::vector<group> out;
    auto& cg = b.consumer_groups();
    for (const auto& l : cg.list()) {
        auto d = cg.describe(l.group_id);
        if (!d) continue;
        group g;
        g.group_id = d->group_id;
        g.state = d->state;
        g.protocol_type = "consumer";
        g.protocol = d->assignor;
        g.members = static_cast<int32_t>(d->members.size());
        g.generation = d->group_epoch;
        g.type = "consumer";
        out.push_back(std::move(g));
    }
    auto& c = b.groups();
    for (const auto& l : c.list()) {
        if (cg.is_consumer_group(l.group_id)) continue;
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

std::vector<sql::broker_state::transaction> sql_state::transactions() {
    return on_loop<std::vector<transaction>>(_b, [this] { return read_transactions(_b); });
}

std::vector<sql::broker_state::transaction> sql_state::read_transactions(broker::broker& b) {
    std::vector<transaction> out;
    for (const auto& t : b.txns().all()) {
        transaction r;
        r.transactional_id = t.transactional_id;
        r.producer_id = t.producer_id;
        r.producer_epoch = t.producer_epoch;
        r.state = std::string(txn::state_name(t.state));
        ::sluice::group::partition_map parts;
        for (const auto& tp : t.partitions) parts[tp.topic].insert(tp.partition);
        r.partitions = ::sluice::group::format_partitions(parts);
        for (const auto& g : t.groups) r.groups += (r.groups.empty() ? "" : ",") + g;
        r.timeout_ms = t.timeout_ms;
        r.start_ms = t.start_ms;
        r.update_ms = t.update_ms;
        out.push_back(std::move(r));
    }
    return out;
}

std::map<std::string, std::string> sql_state::topic_defaults() {
    return _b.config().topic_defaults;
}

}  // namespace sluice::app
