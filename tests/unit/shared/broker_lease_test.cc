// Brokers' leases in the shared catalog, against PostgreSQL (SLUICE_TEST_PG_URL, as
// store_backends.h): registration refused while the id is held, release, expiry,
// renewal, fencing.

#include "shared/broker_registry.h"

#include <gtest/gtest.h>

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
    busy->start_renewing([&](const error&) { lost = true; });
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
    first->start_renewing([&](const error& e) {
        std::lock_guard lock(mu);
        lost = e;
    });
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

}  // namespace
}  // namespace sluice::shared::testing
