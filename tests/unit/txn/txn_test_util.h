#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <utility>

#include "txn/coordinator.h"

namespace sluice::txn::test {

// Keeps records in memory, with the shared catalog's conditional writes (a put or erase
// made from a record another writer changed since is refused); can be told to fail, to
// check that a failed write changes nothing, and to run something just before a put
// (another broker's write landing between this one's read and its write).
class memory_store final : public state_store {
  public:
    result<std::vector<txn_metadata>> load() override {
        std::vector<txn_metadata> out;
        for (const auto& [_, t] : rows) out.push_back(t);
        return out;
    }
    result<bool> put(const txn_metadata& t) override {
        if (fail) return error{errc::io_error, "disk gone"};
        if (auto hook = std::exchange(before_put, nullptr)) hook();
        auto it = rows.find(t.transactional_id);
        if ((it == rows.end() ? 0 : it->second.version) != t.version) {
            ++lost;
            return false;
        }
        auto& row = rows[t.transactional_id];
        row = t;
        ++row.version;
        ++puts;
        return true;
    }
    result<bool> erase(const std::string& id, int64_t version) override {
        if (fail_erase) return error{errc::io_error, "disk gone"};
        auto it = rows.find(id);
        if (it == rows.end() || it->second.version != version) return false;
        rows.erase(it);
        return true;
    }
    std::map<std::string, txn_metadata> rows;
    bool fail = false;
    bool fail_erase = false;
    int puts = 0;
    int lost = 0;  // puts refused: the record had changed
    std::function<void()> before_put;
};

// Records each completion; completes at once unless `hold` (then complete_held()).
class recording_participants final : public participants {
  public:
    struct call {
        txn_metadata t;
        bool commit;
    };
    void complete(const txn_metadata& t, bool commit, done_fn done) override {
        calls.push_back({t, commit});
        if (hold)
            held.push_back(std::move(done));
        else
            done(result<void>{});
    }
    void complete_held(result<void> r = {}) {
        auto h = std::move(held);
        held.clear();
        for (auto& d : h) d(r);
    }
    std::vector<call> calls;
    std::vector<done_fn> held;
    bool hold = false;
};

struct fixture : ::testing::Test {
    memory_store store;
    recording_participants parts;
    int64_t now = 1'000'000;
    int64_t next_id = 100;
    int64_t id_expiration_ms = 604800000;
    std::unique_ptr<coordinator> coord = make();

    std::unique_ptr<coordinator> make() {
        services svc;
        svc.store = &store;
        svc.parts = &parts;
        svc.allocate_producer_id = [this]() -> result<int64_t> { return next_id++; };
        svc.wall_ms = [this] { return now; };
        return std::make_unique<coordinator>(settings{60000, id_expiration_ms}, std::move(svc));
    }
    producer_answer init(const std::string& id, int64_t pid = -1, int16_t epoch = -1,
                         int32_t timeout = 10000) {
        producer_answer out{txn_error::not_available};
        coord->init_producer_id(id, timeout, pid, epoch, [&](producer_answer a) { out = a; });
        return out;
    }
    std::optional<producer_answer> end(const std::string& id, const producer_answer& p, bool commit,
                                       bool tv2 = false) {
        std::optional<producer_answer> out;
        coord->end_txn(id, p.producer_id, p.producer_epoch, commit, tv2,
                       [&](producer_answer a) { out = a; });
        return out;
    }
    txn_error add(const std::string& id, const producer_answer& p,
                  std::vector<topic_partition> tps = {{"t", 0}}) {
        return coord->add_partitions(id, p.producer_id, p.producer_epoch, tps);
    }
};

}  // namespace sluice::txn::test
