#pragma once

// The broker's side of the SQL system tables: reads the group coordinator's state for
// SQL threads by running on the event loop, where the coordinator lives.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>

#include "broker/broker.h"
#include "catalog/offset_store.h"
#include "sql/system_tables.h"

namespace sluice::app {

// How long another thread waits for the event loop: it answers within microseconds
// unless it is stopping, and then the caller gets an empty answer rather than hang.
constexpr auto loop_wait = std::chrono::seconds(5);

// Runs fn on the broker's event loop and returns its result; T{} after loop_wait.
template <typename T, typename Fn>
T on_loop(broker::broker& b, Fn fn) {
    auto done = std::make_shared<std::promise<T>>();
    auto f = done->get_future();
    b.loop().post([done, fn = std::move(fn)]() mutable { done->set_value(fn()); });
    if (f.wait_for(loop_wait) != std::future_status::ready) return T{};
    return f.get();
}

class sql_state final : public sql::broker_state {
  public:
    explicit sql_state(broker::broker& b) : _b(b) {}
    // Shared mode: system.group_offsets lists every group's offsets from the shared
    // catalog (read through `offsets`, which this then owns), not only those of the
    // groups this broker coordinates.
    void read_offsets_from(std::unique_ptr<catalog::offset_store> offsets) {
        _offsets = std::move(offsets);
    }
    std::vector<group> groups() override;
    std::vector<committed_offset> group_offsets() override;
    std::vector<group_member> group_members() override;
    std::vector<transaction> transactions() override;
    std::vector<share_partition> share_groups() override;
    std::map<std::string, std::string> topic_defaults() override;
    // The same, on the loop thread (the callers above hop there).
    static std::vector<group> read_groups(broker::broker& b);
    static std::vector<committed_offset> read_group_offsets(broker::broker& b);
    static std::vector<group_member> read_group_members(broker::broker& b);
    static std::vector<transaction> read_transactions(broker::broker& b);
    // Loop thread; `done` gets the rows on the loop thread once the windows are read.
    static void read_share_groups(broker::broker& b,
                                  std::function<void(std::vector<share_partition>)> done);

  private:
    broker::broker& _b;
    std::mutex _offsets_mu;  // the store is used by one caller at a time
    std::unique_ptr<catalog::offset_store> _offsets;
};

}  // namespace sluice::app
