// Group state in the catalog file: what is put loads back field for field (bytes with
// zeros, absent optional fields, empty assignments, members in join order), a put
// replaces the group's members, an erase forgets it, and all of it survives reopening.

#include "catalog/group_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "catalog/catalog.h"
#include "store_fixture.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;
using group::group_state;
using group::group_write;
using group::stored_group;
using group::stored_member;

class group_store_test : public store_fixture<group_store> {
  protected:
    void apply(std::vector<group_write> w) {
        auto r = _store->apply(w);
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    static group_write put(stored_group g) { return {group_write::kind::put, std::move(g)}; }
    static group_write erase(const std::string& id) {
        group_write w{group_write::kind::erase, {}};
        w.group.group_id = id;
        return w;
    }

    static stored_group connect_group() {
        stored_group g;
        g.group_id = "connect-cluster";
        g.state = group_state::stable;
        g.protocol_type = "connect";
        g.protocol_name = "sessioned";
        g.generation = 7;
        g.leader = "connect-1-b";
        g.state_ms = 1'700'000'000'123;
        stored_member a;
        a.member_id = "connect-1-b";
        a.client_id = "connect-1";
        a.client_host = "/127.0.0.1";
        a.session_timeout_ms = 10000;
        a.rebalance_timeout_ms = 60000;
        a.protocols = {{"sessioned", {0, 1, 0, 0, 255}}, {"compatible", {0, 0}}, {"eager", {}}};
        a.assignment = {0, 1, 2, 0, 3};
        stored_member b = a;
        b.member_id = "connect-2-a";  // sorts before a: the join order must win
        b.client_id = "connect-2";
        b.instance_id = "worker-2";
        b.assignment = {};
        g.members = {a, b};
        return g;
    }
};

TEST_F(group_store_test, a_fresh_catalog_has_no_groups) {
    EXPECT_TRUE(load().empty());
}

TEST_F(group_store_test, a_put_group_loads_back_with_every_field) {
    stored_group empty;
    empty.group_id = "idle";
    empty.state = group_state::empty;
    empty.generation = 3;
    empty.state_ms = 42;
    apply({put(connect_group()), put(empty)});
    reopen();
    auto got = load();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], connect_group());
    EXPECT_EQ(got[1], empty);
    EXPECT_FALSE(got[1].protocol_type);
    EXPECT_FALSE(got[0].members[0].instance_id);
    EXPECT_EQ(got[0].members[1].instance_id, std::optional<std::string>("worker-2"));
}

TEST_F(group_store_test, a_put_replaces_the_group_and_its_members) {
    apply({put(connect_group())});
    stored_group next = connect_group();
    next.state = group_state::preparing_rebalance;
    next.generation = 8;
    next.members.erase(next.members.begin());
    next.members[0].assignment.clear();
    next.members[0].protocols = {{"eager", {9}}};
    next.leader = next.members[0].member_id;
    apply({put(next)});
    auto got = load();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], next);
}

TEST_F(group_store_test, an_erase_forgets_the_group_only) {
    stored_group other = connect_group();
    other.group_id = "other";
    apply({put(connect_group()), put(other)});
    apply({erase("connect-cluster"), erase("never-stored")});
    auto got = load();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], other);
}

TEST_F(group_store_test, writes_apply_in_order_within_one_transaction) {
    apply({put(connect_group()), erase("connect-cluster")});
    EXPECT_TRUE(load().empty());
    apply({erase("connect-cluster"), put(connect_group())});
    EXPECT_EQ(load().size(), 1u);
}

TEST_F(group_store_test, a_failed_batch_changes_nothing) {
    apply({put(connect_group())});
    stored_group bad = connect_group();
    bad.group_id = "bad";
    bad.generation = -1;  // refused by the schema's CHECK
    stored_group fine = connect_group();
    fine.group_id = "fine";
    EXPECT_FALSE(_store->apply(std::vector<group_write>{put(fine), put(bad)}).ok());
    auto got = load();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].group_id, "connect-cluster");
}

}  // namespace
}  // namespace sluice::catalog

namespace sluice::catalog {
namespace {

// Consumer groups (KIP-848, schema version 9): every field back, a put replaces the
// members, an erase forgets the group, classic records are left alone.
TEST_F(group_store_test, ConsumerGroupsRoundTrip) {
    group::stored_consumer_group g;
    g.group_id = "cg";
    g.group_epoch = 5;
    g.assignment_epoch = 5;
    g.assignor = "uniform";
    g.state_ms = 1234;
    group::stored_consumer_member a;
    a.member_id = "a";
    a.instance_id = "host-1";
    a.client_id = "c";
    a.client_host = "/127.0.0.1";
    a.member_epoch = 4;
    a.previous_epoch = 3;
    a.rebalance_timeout_ms = 30000;
    a.server_assignor = "range";
    a.subscribed_topics = {"orders", "payments"};
    a.assigned = {{"orders", {0, 1}}, {"payments", {2}}};
    a.pending_revocation = {{"orders", {5}}};
    a.target = {{"orders", {0, 1, 7}}};
    group::stored_consumer_member b;
    b.member_id = "b";
    b.rack_id = "r1";
    b.member_epoch = -2;
    b.subscribed_regex = "audit-.*";
    // A classic-protocol member (after an online upgrade, schema version 11).
    group::stored_consumer_member c;
    c.member_id = "c";
    c.member_epoch = 5;
    c.subscribed_topics = {"orders"};
    c.classic = group::stored_consumer_member::classic_metadata{
        45000, {{"range", {0, 1, 2}}, {"cooperative-sticky", {}}}};
    g.members = {a, b, c};
    group_write w{group_write::kind::put_consumer, {}, g};
    apply({w, put(stored_group{.group_id = "classic"})});
    reopen();
    auto rows = _store->load_consumer();
    ASSERT_TRUE(rows.ok()) << rows.err().message;
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ(rows->front(), g);
    g.members.pop_back();
    g.members.pop_back();
    g.group_epoch = 6;
    apply({group_write{group_write::kind::put_consumer, {}, g}});
    EXPECT_EQ(_store->load_consumer()->front(), g);
    group_write gone{group_write::kind::erase_consumer, {}, {}};
    gone.consumer.group_id = "cg";
    apply({gone});
    EXPECT_TRUE(_store->load_consumer()->empty());
    EXPECT_EQ(load().size(), 1u);
}

}  // namespace
}  // namespace sluice::catalog
