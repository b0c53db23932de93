// The metadata stores' behaviour, one test for both implementations (store_backends.h):
// topics with ids and configs, committed offsets, classic and consumer group state,
// transaction state, producer ids and broker configs load back field for field after a
// restart, and refuse what they must with the same error codes.

#include <gtest/gtest.h>

#include <set>

#include "group/coordinator.h"
#include "store_backends.h"

namespace sluice::shared::testing {
namespace {

using catalog::offset_write;
using catalog::stored_offset;
using catalog::topic_info;
using group::group_write;

template <typename Backend>
class metadata_stores : public store_test<Backend> {
  protected:
    topic_info topic(const std::string& name, int32_t partitions,
                     std::map<std::string, std::string> configs = {}) {
        topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = partitions;
        t.configs = std::move(configs);
        t.created_ms = 1'700'000'000'000;
        return t;
    }
    void create(const topic_info& t) {
        auto r = this->_s.topics->create_topic(t);
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    void offsets(std::vector<offset_write> w) {
        auto r = this->_s.offsets->apply(w);
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    std::vector<stored_offset> load_offsets() {
        auto r = this->_s.offsets->load();
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() ? *r : std::vector<stored_offset>{};
    }
    void groups(std::vector<group_write> w) {
        auto r = this->_s.groups->apply(w);
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
};
TYPED_TEST_SUITE(metadata_stores, backends, backend_names);

stored_offset offset(const std::string& g, const std::string& t, int32_t p, int64_t o) {
    stored_offset s;
    s.group_id = g;
    s.topic = t;
    s.partition = p;
    s.offset = o;
    s.commit_ms = 1000 + o;
    return s;
}

TYPED_TEST(metadata_stores, topics_with_ids_and_configs_survive_a_restart) {
    auto orders =
        this->topic("orders", 3, {{"cleanup.policy", "compact"}, {"retention.ms", "1000"}});
    auto audit = this->topic("audit", 1);
    this->create(orders);
    const uint64_t gen = this->_s.topics->generation();
    this->create(audit);
    EXPECT_NE(this->_s.topics->generation(), gen);
    this->reopen();
    auto all = this->_s.topics->list_topics();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0], audit);  // by name
    EXPECT_EQ(all[1], orders);
    EXPECT_EQ(this->_s.topics->find_topic(orders.id), orders);
    EXPECT_EQ(this->_s.topics->find_topic("audit"), audit);
    EXPECT_FALSE(this->_s.topics->find_topic("nope").has_value());
}

TYPED_TEST(metadata_stores, topic_changes_refuse_what_they_must) {
    auto t = this->topic("orders", 2);
    this->create(t);
    auto& topics = *this->_s.topics;
    auto same_name = this->topic("orders", 1);
    EXPECT_EQ(topics.create_topic(same_name).code(), errc::already_exists);
    auto same_id = this->topic("other", 1);
    same_id.id = t.id;
    auto r = topics.create_topic(same_id);
    EXPECT_EQ(r.code(), errc::already_exists);
    EXPECT_NE(r.err().message.find("'orders'"), std::string::npos) << r.err().message;
    EXPECT_EQ(topics.create_topic(this->topic("bad name!", 1)).code(), errc::invalid_argument);
    EXPECT_EQ(topics.create_topic(this->topic("zero", 0)).code(), errc::invalid_argument);
    EXPECT_EQ(topics.create_topic(this->topic("cfg", 1, {{"no.such.config", "1"}})).code(),
              errc::invalid_argument);
    EXPECT_EQ(topics.set_partitions("orders", 2).code(), errc::invalid_argument);
    EXPECT_EQ(topics.set_partitions("missing", 5).code(), errc::not_found);
    EXPECT_EQ(topics.set_topic_configs("missing", {}).code(), errc::not_found);
    EXPECT_EQ(topics.set_topic_configs("orders", {{"retention.ms", "x"}}).code(),
              errc::invalid_argument);
    EXPECT_EQ(topics.delete_topic("missing").code(), errc::not_found);
    EXPECT_EQ(topics.list_topics().size(), 1u);
}

TYPED_TEST(metadata_stores, configs_and_partitions_change_and_a_deleted_topic_is_gone) {
    this->create(this->topic("orders", 2, {{"retention.ms", "1000"}}));
    auto& topics = *this->_s.topics;
    ASSERT_TRUE(topics.set_topic_configs("orders", {{"cleanup.policy", "compact"}}).ok());
    ASSERT_TRUE(topics.set_partitions("orders", 5).ok());
    this->reopen();
    auto t = this->_s.topics->find_topic("orders");
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->partitions, 5);
    EXPECT_EQ(t->configs, (std::map<std::string, std::string>{{"cleanup.policy", "compact"}}));
    const uint64_t gen = this->_s.topics->generation();
    ASSERT_TRUE(this->_s.topics->delete_topic("orders").ok());
    EXPECT_NE(this->_s.topics->generation(), gen);
    EXPECT_FALSE(this->_s.topics->find_topic(t->id).has_value());
    this->reopen();
    EXPECT_TRUE(this->_s.topics->list_topics().empty());
    // The name is free again, with a new id.
    this->create(this->topic("orders", 1));
}

TYPED_TEST(metadata_stores, committed_offsets_load_back_and_are_replaced_and_erased) {
    this->create(this->topic("in", 4));
    auto a = offset("g1", "in", 0, 10);
    a.metadata = "m";
    a.leader_epoch = 3;
    auto b = offset("g1", "in", 1, 11);
    b.expire_ms = 99999;
    auto c = offset("g2", "in", 0, 12);
    auto d = offset("g2", "in", 3, 13);
    using k = offset_write::kind;
    this->offsets({{k::commit, a},
                   {k::commit, b},
                   {k::commit, c},
                   {k::commit, d},
                   {k::commit, offset("g1", "gone", 0, 1)}});  // no such topic: dropped
    this->reopen();
    auto rows = this->load_offsets();
    std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
        return std::tie(x.group_id, x.partition) < std::tie(y.group_id, y.partition);
    });
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].metadata, a.metadata);
    EXPECT_EQ(rows[0].leader_epoch, 3);
    EXPECT_EQ(rows[1].expire_ms, 99999);
    EXPECT_EQ(rows[2].metadata, std::nullopt);
    EXPECT_EQ(rows[2].expire_ms, -1);
    EXPECT_EQ(rows[3].offset, 13);

    auto a2 = offset("g1", "in", 0, 20);
    auto stale = b;
    stale.commit_ms = 1;  // not b's commit time: kept
    this->offsets({{k::commit, a2}, {k::erase_if_unchanged, stale}, {k::erase, c}});
    rows = this->load_offsets();
    ASSERT_EQ(rows.size(), 3u);
    this->offsets({{k::erase_if_unchanged, b}, {k::erase_group, offset("g2", "", 0, 0)}});
    rows = this->load_offsets();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].offset, 20);
    EXPECT_EQ(rows[0].commit_ms, a2.commit_ms);
    // Deleting the topic deletes its offsets.
    ASSERT_TRUE(this->_s.topics->delete_topic("in").ok());
    EXPECT_TRUE(this->load_offsets().empty());
}

group::stored_group classic_group() {
    group::stored_group g;
    g.group_id = "app";
    g.state = group::group_state::stable;
    g.protocol_type = "consumer";
    g.protocol_name = "range";
    g.generation = 4;
    g.leader = "m-2";
    g.state_ms = 1'700'000'000'555;
    group::stored_member m2;
    m2.member_id = "m-2";
    m2.client_id = "c2";
    m2.client_host = "/10.0.0.2";
    m2.session_timeout_ms = 45000;
    m2.rebalance_timeout_ms = 300000;
    m2.protocols = {{"range", {0, 0, 1, 255, 0}}, {"roundrobin", {}}};
    m2.assignment = {0, 1, 0, 0, 7};
    group::stored_member m1 = m2;
    m1.member_id = "m-1";  // joined after m-2
    m1.instance_id = "static-1";
    m1.assignment = {};
    g.members = {m2, m1};
    return g;
}

group::stored_consumer_group consumer_group() {
    group::stored_consumer_group g;
    g.group_id = "kip848";
    g.group_epoch = 9;
    g.assignment_epoch = 8;
    g.assignor = "uniform";
    g.state_ms = 77;
    group::stored_consumer_member m;
    m.member_id = "a";
    m.rack_id = "r1";
    m.client_id = "cid";
    m.client_host = "/h";
    m.member_epoch = 9;
    m.previous_epoch = 8;
    m.rebalance_timeout_ms = 1000;
    m.server_assignor = "range";
    m.subscribed_topics = {"t1", "t2"};
    m.assigned = {{"t1", {0, 1}}};
    m.pending_revocation = {{"t2", {3}}};
    m.target = {{"t1", {0}}, {"t2", {1, 2}}};
    group::stored_consumer_member n;
    n.member_id = "b";
    n.instance_id = "i";
    n.member_epoch = -2;
    n.subscribed_regex = "t.*";
    g.members = {m, n};
    return g;
}

TYPED_TEST(metadata_stores, group_state_loads_back_field_for_field_after_a_restart) {
    group::stored_group empty;
    empty.group_id = "idle";
    empty.generation = 2;
    group_write put_classic{group_write::kind::put, classic_group()};
    group_write put_empty{group_write::kind::put, empty};
    group_write put_consumer{group_write::kind::put_consumer, {}, consumer_group()};
    this->groups({put_classic, put_empty, put_consumer});
    this->reopen();
    auto classic = this->_s.groups->load();
    ASSERT_TRUE(classic.ok()) << classic.err().message;
    ASSERT_EQ(classic->size(), 2u);
    EXPECT_EQ((*classic)[0], classic_group());
    EXPECT_EQ((*classic)[1], empty);
    auto consumer = this->_s.groups->load_consumer();
    ASSERT_TRUE(consumer.ok()) << consumer.err().message;
    ASSERT_EQ(consumer->size(), 1u);
    EXPECT_EQ((*consumer)[0], consumer_group());

    // A put replaces the members; erases forget the groups.
    auto fewer = classic_group();
    fewer.members.pop_back();
    fewer.state = group::group_state::completing_rebalance;  // stored as preparing one
    this->groups({{group_write::kind::put, fewer}});
    classic = this->_s.groups->load();
    ASSERT_TRUE(classic.ok());
    fewer.state = group::group_state::preparing_rebalance;
    EXPECT_EQ((*classic)[0], fewer);
    group_write erase{group_write::kind::erase, {}};
    erase.group.group_id = "app";
    group_write erase_consumer{group_write::kind::erase_consumer, {}, {}};
    erase_consumer.consumer.group_id = "kip848";
    this->groups({erase, erase_consumer});
    this->reopen();
    classic = this->_s.groups->load();
    ASSERT_TRUE(classic.ok());
    ASSERT_EQ(classic->size(), 1u);
    EXPECT_EQ((*classic)[0].group_id, "idle");
    EXPECT_TRUE(this->_s.groups->load_consumer()->empty());
}

txn::txn_metadata transaction(const std::string& id) {
    txn::txn_metadata t;
    t.transactional_id = id;
    t.producer_id = 5000;
    t.producer_epoch = 12;
    t.last_producer_id = 5000;
    t.last_producer_epoch = 11;
    t.timeout_ms = 30000;
    t.state = txn::txn_state::ongoing;
    t.tv2 = true;
    t.partitions = {{"x", 0}, {"y", 4}};
    t.groups = {"g"};
    t.offsets = {{"g", {"x", 0}, 100, 2, "meta", 5}, {"g", {"y", 4}, 7, -1, std::nullopt, 6}};
    t.start_ms = 10;
    t.update_ms = 11;
    return t;
}

TYPED_TEST(metadata_stores, transaction_state_is_put_replaced_and_erased) {
    auto& txns = *this->_s.txns;
    ASSERT_TRUE(txns.put(transaction("t1")).ok());
    ASSERT_TRUE(txns.put(transaction("t2")).ok());
    auto done = transaction("t1");
    done.state = txn::txn_state::complete_abort;
    done.partitions.clear();
    done.offsets.clear();
    done.groups.clear();
    done.start_ms = -1;
    done.version = 1;  // made from the record the first put stored
    auto stored = txns.put(done);
    ASSERT_TRUE(stored.ok());
    EXPECT_TRUE(*stored);
    this->reopen();
    auto rows = this->_s.txns->load();
    ASSERT_TRUE(rows.ok()) << rows.err().message;
    ASSERT_EQ(rows->size(), 2u);
    // The change counter is the shared catalog's alone (shared_catalog_test.cc).
    for (auto& t : *rows) t.version = 0;
    done.version = 0;
    EXPECT_EQ((*rows)[0], done);
    EXPECT_EQ((*rows)[1], transaction("t2"));
    ASSERT_TRUE(this->_s.txns->erase("t2", 1).ok());
    rows = this->_s.txns->load();
    ASSERT_TRUE(rows.ok());
    ASSERT_EQ(rows->size(), 1u);
}

TYPED_TEST(metadata_stores, share_partitions_keep_their_window_and_the_shared_one_its_locks) {
    using group::share::record_state;
    using group::share::share_partition;
    auto& shares = *this->_s.shares;
    const group::share::partition_limits lim{30000, 5, 2000};
    const int64_t now = group::steady_now_ms();
    share_partition sp(10, 10, {});
    ASSERT_EQ(sp.acquire("m1", 10, 14, 10, now, lim).size(), 1u);  // 10..14 to m1
    ASSERT_EQ(sp.acknowledge("m1", 10, 11, {1}, now, lim), protocol::error_code::none);
    ASSERT_EQ(sp.acknowledge("m1", 13, 13, {3}, now, lim), protocol::error_code::none);
    ASSERT_TRUE(shares.save("g", {"t", 0}, sp).ok());
    ASSERT_TRUE(shares.save("h", {"t", 1}, share_partition(5, 5, {})).ok());
    this->reopen();
    auto rows = this->_s.shares->load("g");
    ASSERT_TRUE(rows.ok()) << rows.err().message;
    ASSERT_EQ(rows->size(), 1u);
    const share_partition& back = (*rows)[0].state;
    EXPECT_EQ(back.start(), 12);
    EXPECT_EQ(back.end(), 15);
    EXPECT_EQ(back.records().at(13).state, record_state::archived);
    EXPECT_EQ(back.records().at(12).delivery_count, 1);
    if (this->_s.shares->shared()) {
        // The shared catalog keeps the lock: still m1's, until about 30 s from now.
        const auto& r = back.records().at(14);
        EXPECT_EQ(r.state, record_state::acquired);
        EXPECT_EQ(r.member, "m1");
        EXPECT_NEAR(static_cast<double>(r.lock_until_ms), static_cast<double>(now + 30000), 2000);
        // update(): read, changed and saved in one transaction.
        protocol::error_code e{};
        auto u = this->_s.shares->update("g", {"t", 0}, [&](auto& s) {
            e = s->acknowledge("m1", 12, 12, {1}, now, lim);
            return e == protocol::error_code::none;
        });
        ASSERT_TRUE(u.ok()) << u.err().message;
        EXPECT_EQ(e, protocol::error_code::none);
        auto created = this->_s.shares->update("g", {"t", 2}, [](auto& s) {
            if (!s) s = share_partition(7, 7, {});
            return true;
        });
        ASSERT_TRUE(created.ok());
        rows = this->_s.shares->load("g");
        ASSERT_TRUE(rows.ok());
        ASSERT_EQ(rows->size(), 2u);
        EXPECT_EQ((*rows)[0].state.start(), 14);
        EXPECT_EQ((*rows)[1].state.start(), 7);
    } else {
        EXPECT_EQ(back.records().at(14).state, record_state::available);  // locks not kept
    }
    ASSERT_TRUE(this->_s.shares->erase("g", {{"t", 0}, {"t", 2}}).ok());
    rows = this->_s.shares->load("");
    ASSERT_TRUE(rows.ok());
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].group, "h");
}

TYPED_TEST(metadata_stores, producer_ids_are_never_given_twice_across_restarts) {
    std::set<int64_t> seen;
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 7; ++i) {
            auto id = this->_s.producer_ids->allocate_producer_id();
            ASSERT_TRUE(id.ok()) << id.err().message;
            EXPECT_GE(*id, 0);
            EXPECT_TRUE(seen.insert(*id).second) << *id << " given twice";
        }
        this->reopen();
    }
    EXPECT_EQ(seen.size(), 14u);
}

TYPED_TEST(metadata_stores, broker_configs_are_kept_per_scope) {
    auto& cfg = *this->_s.broker_configs;
    ASSERT_TRUE(cfg.set_broker_configs("", {{"log.retention.ms", "1000"}}).ok());
    ASSERT_TRUE(cfg.set_broker_configs("broker", {{"a", "1"}, {"b", "2"}}).ok());
    ASSERT_TRUE(cfg.set_broker_configs("broker", {{"b", "3"}}).ok());
    EXPECT_EQ(cfg.broker_configs("x").code(), errc::invalid_argument);
    EXPECT_EQ(cfg.set_broker_configs("x", {}).code(), errc::invalid_argument);
    this->reopen();
    auto cluster = this->_s.broker_configs->broker_configs("");
    ASSERT_TRUE(cluster.ok());
    EXPECT_EQ(*cluster, (std::map<std::string, std::string>{{"log.retention.ms", "1000"}}));
    auto own = this->_s.broker_configs->broker_configs("broker");
    ASSERT_TRUE(own.ok());
    EXPECT_EQ(*own, (std::map<std::string, std::string>{{"b", "3"}}));
}

}  // namespace
}  // namespace sluice::shared::testing
