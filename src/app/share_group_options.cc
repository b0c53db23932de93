#include "app/share_group_options.h"

namespace sluice::app {

void add_share_group_options(CLI::App& cmd, group::share::config& c) {
    constexpr int32_t day_ms = 86400000;
    cmd.add_option("--group-share-session-timeout-ms", c.session_timeout_ms,
                   "Share groups: how long a member may go without a heartbeat before it is "
                   "removed and its records offered again (group.share.session.timeout.ms)")
        ->check(CLI::Range(1, day_ms))
        ->capture_default_str();
    cmd.add_option("--group-share-heartbeat-interval-ms", c.heartbeat_interval_ms,
                   "Share groups: the heartbeat interval members are told to keep "
                   "(group.share.heartbeat.interval.ms)")
        ->check(CLI::Range(1, day_ms))
        ->capture_default_str();
    cmd.add_option("--group-share-record-lock-duration-ms", c.record_lock_duration_ms,
                   "Share groups: how long a member holds the records it acquired before they "
                   "are offered to another (group.share.record.lock.duration.ms)")
        ->check(CLI::Range(1000, 3600000))
        ->capture_default_str();
    cmd.add_option("--group-share-delivery-count-limit", c.delivery_count_limit,
                   "Share groups: deliveries of a record before it is archived instead of "
                   "offered again (group.share.delivery.count.limit)")
        ->check(CLI::Range(2, 10))
        ->capture_default_str();
    cmd.add_option("--group-share-partition-max-record-locks", c.partition_max_record_locks,
                   "Share groups: records in flight (acquired or waiting for redelivery) per "
                   "partition (group.share.partition.max.record.locks)")
        ->check(CLI::Range(100, 10000))
        ->capture_default_str();
    cmd.add_option("--share-auto-offset-reset", c.auto_offset_reset,
                   "Share groups: where a group starts reading a partition it has never read "
                   "(share.auto.offset.reset; latest or earliest)")
        ->check(CLI::IsMember({"latest", "earliest"}))
        ->capture_default_str();
    cmd.add_option_function<std::string>(
           "--share-isolation-level",
           [&c](const std::string& v) { c.read_committed = v == "read_committed"; },
           "Share groups: read_uncommitted, or read_committed: records of open or aborted "
           "transactions and control records are never handed out (share.isolation.level)")
        ->check(CLI::IsMember({"read_uncommitted", "read_committed"}))
        ->default_str("read_uncommitted");
}

}  // namespace sluice::app
