// Brokers' leases in the shared catalog, against PostgreSQL (SLUICE_TEST_PG_URL, as
// store_backends.h): registration refused while the id is held, release, expiry,
// renewal, fencing.

#include "shared/broker_registry.h"

#include <gtest/gtest.h>

#include "shared/batch_index.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "store_backends.h"

namespace sluice::shared::testing {
namespace {

using namespace std::chrono_literals;

class broker_leases : public pg_catalog_test {
  protected:
    std::unique_ptr<broker_registry> take(int32_t id, std::chrono::milliseconds lease = 10s) {
        broker_address a;
        a.broker_id = id;
        a.host = "127.0.0.1";
        a.kafka_port = 9000 + id;
        a.sql_port = 5400 + id;
        auto r = broker_registry::register_broker(_cfg, a, lease);
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() ? std::move(*r) : nullptr;
    }
    std::vector<int32_t> live_ids() {
        auto db = connect();
        auto live = live_brokers(*db);
        EXPECT_TRUE(live.ok()) << live.err().message;
        std::vector<int32_t> out;
        if (live.ok())
            for (const auto& b : *live) out.push_back(b.address.broker_id);
        return out;
    }
};

TEST_F(broker_leases, a_broker_id_is_held_until_released_and_then_taken_again) {
    auto one = take(1);
    auto two = take(2);
    ASSERT_TRUE(one && two);
    EXPECT_EQ(one->incarnation(), 1);
    EXPECT_EQ(live_ids(), (std::vector<int32_t>{1, 2}));
    auto all = one->live();
    ASSERT_TRUE(all.ok());
    EXPECT_EQ((*all)[1].address, two->address());

    broker_address again = one->address();
    again.kafka_port = 9999;
    auto refused = broker_registry::register_broker(_cfg, again, 10s);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.code(), errc::in_use);
    EXPECT_NE(refused.err().message.find("127.0.0.1:9001"), std::string::npos)
        << refused.err().message;

    ASSERT_TRUE(one->release().ok());
    EXPECT_EQ(live_ids(), (std::vector<int32_t>{2}));
    auto successor = broker_registry::register_broker(_cfg, again, 10s);
    ASSERT_TRUE(successor.ok()) << successor.err().message;
    EXPECT_EQ((*successor)->incarnation(), 2);
    // The first process, still running, is fenced: it may not renew the id's lease.
    auto fenced = one->renew();
    EXPECT_EQ(fenced.code(), errc::in_use);
    EXPECT_TRUE((*successor)->renew().ok());
    auto live = (*successor)->live();
    ASSERT_TRUE(live.ok());
    EXPECT_EQ((*live)[0].address.kafka_port, 9999);
    EXPECT_EQ((*live)[0].incarnation, 2);
}

TEST_F(broker_leases, a_lease_not_renewed_passes_and_a_renewed_one_does_not) {
    auto quiet = take(1, 1000ms);
    auto busy = take(2, 1000ms);
    ASSERT_TRUE(quiet && busy);
    std::atomic<bool> lost{false};
    broker_registry::lease_events events;
    events.lost = [&](const error&) { lost = true; };
    events.fenced = [&](const error&) { lost = true; };
    busy->start_renewing(std::move(events));
    std::this_thread::sleep_for(2500ms);  // two and a half leases
    EXPECT_EQ(live_ids(), (std::vector<int32_t>{2}));
    EXPECT_FALSE(lost.load());
    // Once passed, the id may be taken by a new process without waiting.
    broker_address a = quiet->address();
    auto next = broker_registry::register_broker(_cfg, a, 1000ms);
    ASSERT_TRUE(next.ok()) << next.err().message;
    EXPECT_EQ((*next)->incarnation(), 2);
    busy->stop_renewing();
}

TEST_F(broker_leases, a_fenced_broker_is_told_it_lost_its_lease) {
    auto first = take(3, 300ms);
    ASSERT_TRUE(first);
    std::mutex mu;
    std::optional<error> lost;
    broker_registry::lease_events events;
    events.fenced = [&](const error& e) {
        std::lock_guard lock(mu);
        lost = e;
    };
    first->start_renewing(std::move(events));
    // Another process takes the id by force (as an operator would after a partition).
    auto db = connect();
    ASSERT_TRUE(db->exec("UPDATE sluice_brokers SET incarnation = incarnation + 1").ok());
    for (int i = 0; i < 50; ++i) {
        {
            std::lock_guard lock(mu);
            if (lost) break;
        }
        std::this_thread::sleep_for(50ms);
    }
    std::lock_guard lock(mu);
    ASSERT_TRUE(lost.has_value());
    EXPECT_EQ(lost->code, errc::in_use);
    EXPECT_NE(lost->message.find("fenced"), std::string::npos) << lost->message;
}

// The database out of reach for longer than a lease (simulated: the lease made to pass):
// the renewal takes the id again as a new incarnation, and a produce commit begun under
// the old one commits nothing.
TEST_F(broker_leases, a_lease_that_passed_is_renewed_as_a_new_incarnation_that_fences_the_old) {
    auto b = take(4, 10s);
    ASSERT_TRUE(b);
    auto db = connect();
    ASSERT_TRUE(create_topic(*db, std::string(32, 'a'), "fenced", 1).ok());
    object_commit c{"data/4/one", 10, 4, {{std::string(32, 'a'), 0, 1, 0, 10, 0}}, 1};
    auto first = commit_object(*db, c);
    ASSERT_TRUE(first.ok()) << first.err().message;
    EXPECT_EQ((*first)[0].base_offset, 0);

    auto renewed = b->renew();  // within the lease: the same incarnation
    ASSERT_TRUE(renewed.ok()) << renewed.err().message;
    EXPECT_FALSE(*renewed);
    ASSERT_TRUE(db->exec("UPDATE sluice_brokers SET lease_expires_at = CURRENT_TIMESTAMP - "
                         "CAST('1 second' AS INTERVAL) WHERE broker_id = 4")
                    .ok());
    // Passed: commits of the old incarnation are refused even before it registers again.
    c.object_key = "data/4/two";
    auto late = commit_object(*db, c);
    ASSERT_FALSE(late.ok());
    EXPECT_EQ(late.code(), errc::in_use) << late.err().message;
    renewed = b->renew();
    ASSERT_TRUE(renewed.ok()) << renewed.err().message;
    EXPECT_TRUE(*renewed);
    EXPECT_EQ(b->incarnation(), 2);
    EXPECT_EQ(live_ids(), (std::vector<int32_t>{4}));
    late = commit_object(*db, c);  // still the old incarnation's
    ASSERT_FALSE(late.ok());
    EXPECT_EQ(late.code(), errc::in_use);
    c.broker_incarnation = 2;
    auto again = commit_object(*db, c);
    ASSERT_TRUE(again.ok()) << again.err().message;
    EXPECT_EQ((*again)[0].base_offset, 1);
}

}  // namespace
}  // namespace sluice::shared::testing
