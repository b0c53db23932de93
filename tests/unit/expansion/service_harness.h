#pragma once

// The expansion service over a real log manager and catalog in a temporary directory,
// for the service's tests over either target store (expansion/target_store.h).

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "../sql/sql_test_util.h"
#include "catalog/catalog.h"
#include "expansion/service.h"
#include "log/log_manager.h"
#include "support/batch_builder.h"

namespace sluice::expansion::test {

struct service_harness {
    // Opens the catalog, logs and the service (started), its targets in the store
    // make_targets gives.
    void open_service() {
        auto c = catalog::catalog::open(dir.path / "catalog.db");
        ASSERT_TRUE(c) << c.err().message;
        cat = std::move(*c);
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        for (const auto& t : cat->list_topics()) logs->add_topic(t.name, t.partitions, {});
        service_options o{cat.get(), cat.get(), logs.get()};
        if (make_targets) o.targets = make_targets();
        auto svc_or = service::open(std::move(o));
        ASSERT_TRUE(svc_or) << svc_or.err().message;
        svc = std::move(*svc_or);
        logs->set_high_watermark_listener(
            [this](const std::vector<topic_partition>& tps) { svc->on_high_watermark(tps); });
        svc->start();
    }
    void close_service() {
        logs->set_high_watermark_listener(nullptr);
        if (svc) svc->stop();
        // The flusher may be inside a call of the listener it copied before it was
        // cleared: only once the logs are closed (the flusher joined) may svc go.
        logs->close();
        svc.reset();
        logs.reset();
        cat.reset();
    }

    void create_topic(const std::string& name, int32_t partitions) {
        catalog::topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = partitions;
        ASSERT_TRUE(cat->create_topic(t));
        logs->add_topic(name, partitions, {});
    }

    // Appends one batch, waits until it is durable and, with `expanded`, until the
    // topic's expansions have it, as a producer's answer does.
    void produce(const std::string& topic, int32_t p, const std::vector<testing::test_record>& recs,
                 bool expanded = true) {
        auto* pl = logs->get(topic, p);
        ASSERT_NE(pl, nullptr);
        bytes payload = testing::build_batch(recs);
        auto v = protocol::validate_batches(payload, {});
        ASSERT_TRUE(v);
        auto r = pl->append(std::span<uint8_t>(payload), *v, 1000);
        ASSERT_TRUE(r) << r.err().message;
        auto durable = std::make_shared<std::promise<void>>();
        auto fut = durable->get_future();
        logs->when_durable(pl, r->last_offset, [durable](const result<void>&) { durable->set_value(); });
        ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        if (!expanded) return;
        auto done = std::make_shared<std::promise<void>>();
        auto exp = done->get_future();
        svc->when_expanded({topic, p}, r->last_offset, [done] { done->set_value(); });
        ASSERT_EQ(exp.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }

    sql::test::temp_dir dir;
    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<service> svc;
    std::function<std::shared_ptr<target_backend>()> make_targets;
};

}  // namespace sluice::expansion::test
