// Brokers sharing a catalog see each other's users, policies and expansions: two store
// instances over one database stand for two brokers. A user created through one
// authenticates (a real SCRAM exchange, through the broker's access_control) on the other
// once the other refreshed, woken by NOTIFY or by its poll; concurrent writers on both
// serialize instead of failing.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "broker/access.h"
#include "security/sasl.h"
#include "shared/pg_refresher.h"
#include "store_backends.h"

namespace sluice::shared::testing {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

class shared_security : public pg_catalog_test {
  protected:
    std::unique_ptr<pg_security_store> security() {
        auto s = pg_security_store::open(_cfg);
        EXPECT_TRUE(s.ok()) << s.err().message;
        return s.ok() ? std::move(*s) : nullptr;
    }
};

bool authenticates(const security::credential_source& src, const std::string& user,
                   const std::string& password) {
    security::scram_client client(security::scram_mechanism::sha256, user, password);
    auto server = security::make_sasl_server("SCRAM-SHA-256", src);
    auto first = server->step(client.client_first());
    if (first.result != security::sasl_server::step_result::outcome::challenge) return false;
    auto last = server->step(client.client_final(first.response));
    return last.result == security::sasl_server::step_result::outcome::success &&
           client.verify_server_final(last.response);
}

catalog::scram_record credential(const std::string& user, const std::string& password) {
    auto c = security::make_credential(security::scram_mechanism::sha256, password);
    return {user, 1, c.salt, c.iterations, c.stored_key, c.server_key};
}

// How long until `ok` holds, polled every 5 ms; nullopt after `limit`.
template <typename F>
std::optional<std::chrono::milliseconds> time_until(F ok, std::chrono::milliseconds limit) {
    auto start = steady::now();
    while (steady::now() - start < limit) {
        if (ok())
            return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
        std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
}

TEST_F(shared_security, a_user_created_on_one_broker_authenticates_on_another_after_notify) {
    auto a = security();
    auto b = security();
    ASSERT_TRUE(a && b);
    // Broker B: its refresher, polling only every 30 s, so that NOTIFY is what wakes it.
    auto refresher = pg_refresher::start(_cfg, {{security_channel, [&] { return b->refresh(); }}},
                                         std::chrono::milliseconds(30000));
    ASSERT_TRUE(refresher.ok()) << refresher.err().message;
    broker::access_control access_b(*b, security::authz_mode::required, true);
    EXPECT_FALSE(authenticates(access_b, "alice", "secret"));

    ASSERT_TRUE(a->upsert_credential(credential("alice", "secret")).ok());
    auto seen = time_until([&] { return authenticates(access_b, "alice", "secret"); }, 5000ms);
    ASSERT_TRUE(seen.has_value()) << "broker B never saw alice";
    std::printf("alice authenticated on broker B %lld ms after her creation on A (NOTIFY)\n",
                static_cast<long long>(seen->count()));
    EXPECT_LT(*seen, 2000ms);
    EXPECT_FALSE(authenticates(access_b, "alice", "wrong"));

    // A policy attached on A decides on B.
    security::principal alice{"alice", true};
    security::resource orders{security::resource_kind::topic, "orders"};
    EXPECT_FALSE(access_b.allowed(alice, security::action::write, orders));
    ASSERT_TRUE(a->put_policy("w", R"({"Statement":[{"Effect":"Allow","Action":"KafkaWrite",)"
                                   R"("Resource":"sluice:topic:ord*"}]})")
                    .ok());
    ASSERT_TRUE(a->attach_policy("w", "alice").ok());
    EXPECT_TRUE(time_until([&] { return access_b.allowed(alice, security::action::write, orders); },
                           5000ms));
    EXPECT_FALSE(access_b.allowed(alice, security::action::read, orders));

    // Removed on A: refused on B.
    ASSERT_TRUE(a->delete_user("alice").ok());
    EXPECT_TRUE(time_until([&] { return !authenticates(access_b, "alice", "secret"); }, 5000ms));
    EXPECT_TRUE(time_until(
        [&] { return !access_b.allowed(alice, security::action::write, orders); }, 5000ms));
    EXPECT_GT(refresher->get()->refreshes(), 0u);
}

TEST_F(shared_security, without_notifications_the_poll_bounds_the_staleness) {
    auto a = security();
    auto b = security();
    ASSERT_TRUE(a && b);
    // Listening on a channel nobody notifies: only the 300 ms poll refreshes B.
    auto refresher = pg_refresher::start(_cfg, {{"sluice_nobody", [&] { return b->refresh(); }}},
                                         std::chrono::milliseconds(300));
    ASSERT_TRUE(refresher.ok()) << refresher.err().message;
    broker::access_control access_b(*b, security::authz_mode::required, true);
    ASSERT_TRUE(a->upsert_credential(credential("bob", "pw")).ok());
    auto seen = time_until([&] { return authenticates(access_b, "bob", "pw"); }, 5000ms);
    ASSERT_TRUE(seen.has_value());
    std::printf("bob authenticated on broker B %lld ms after his creation on A (300 ms poll)\n",
                static_cast<long long>(seen->count()));
    EXPECT_LT(*seen, 1500ms);
    // Nothing changed since: a refresh reads one row and reports no change.
    auto again = b->refresh();
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);
}

TEST_F(shared_security, writers_on_two_brokers_serialize) {
    auto a = security();
    auto b = security();
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(a->put_policy("shared", "{}").ok());
    constexpr int n = 20;
    std::atomic<int> attached{0}, refused{0}, failed{0};
    auto work = [&](pg_security_store& s) {
        for (int i = 0; i < n; ++i) {
            // Both put the same new policies: an update-or-insert that must not collide.
            if (!s.put_policy("p" + std::to_string(i), "{}").ok()) ++failed;
            auto r = s.attach_policy("shared", "u" + std::to_string(i));
            if (r.ok())
                ++attached;
            else if (r.code() == errc::already_exists)
                ++refused;
            else
                ++failed;
        }
    };
    std::thread ta([&] { work(*a); });
    std::thread tb([&] { work(*b); });
    ta.join();
    tb.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(attached.load(), n);  // each user attached once, by one of them
    EXPECT_EQ(refused.load(), n);
    ASSERT_TRUE(a->refresh().ok());
    ASSERT_TRUE(b->refresh().ok());
    EXPECT_EQ(a->list_policies(), b->list_policies());
    EXPECT_EQ(b->find_policy("shared")->users.size(), static_cast<size_t>(n));
    EXPECT_EQ(b->list_policies().size(), static_cast<size_t>(n + 1));
}

TEST_F(shared_security, expansions_reach_the_other_broker_and_hold_their_topic) {
    auto topics = pg_topic_store::open(_cfg);
    ASSERT_TRUE(topics.ok()) << topics.err().message;
    catalog::topic_info t;
    t.name = "orders";
    t.id = catalog::random_uuid();
    t.partitions = 2;
    ASSERT_TRUE((*topics)->create_topic(t).ok());
    auto a = pg_expansion_store::open(_cfg);
    auto b = pg_expansion_store::open(_cfg);
    ASSERT_TRUE(a.ok() && b.ok());
    catalog::expansion_info e;
    e.target = "main.orders";
    e.topic = "orders";
    e.schema = "{}";
    e.starts = {{0, {12, 0}}, {1, {7, 7}}};  // where each partition starts (version 7)
    ASSERT_TRUE((*a)->create_expansion(e).ok());
    EXPECT_TRUE((*b)->list_expansions().empty());  // not refreshed yet
    auto r = (*b)->refresh();
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_TRUE(*r);
    ASSERT_EQ((*b)->list_expansions().size(), 1u);
    EXPECT_EQ((*b)->list_expansions()[0], (*a)->list_expansions()[0]);
    EXPECT_EQ((*b)->list_expansions()[0].starts, e.starts);
    EXPECT_FALSE(*(*b)->refresh());
    // Another broker's topic store refuses to delete the topic, whatever its cache holds.
    auto other = pg_topic_store::open(_cfg);
    ASSERT_TRUE(other.ok());
    EXPECT_EQ((*other)->delete_topic("orders").code(), errc::in_use);
    ASSERT_TRUE((*b)->delete_expansion("main.orders").ok());
    ASSERT_TRUE((*other)->delete_topic("orders").ok());
    ASSERT_TRUE(*(*a)->refresh());
    EXPECT_TRUE((*a)->list_expansions().empty());
}

}  // namespace
}  // namespace sluice::shared::testing
