#pragma once

// What the virtual tables of one session share with the statement running on it: the
// high watermarks the statement sees, counters of what its scans read, and who is asking
// (the session's principal, checked against the broker's policies).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/types.h"
#include "security/gate.h"

namespace sluice::sql {

// What scans of the topic tables read, for one statement (sluice_last_scan()).
struct scan_stats {
    int64_t partitions_scanned = 0;
    int64_t segments_read = 0;  // distinct segment files a scan read from
    int64_t batches_read = 0;
    int64_t records_read = 0;  // records decoded (not skipped by the offset range)
    int64_t bytes_read = 0;
};

class statement_context {
  public:
    // A statement starts: forget the previous one's snapshot; its counters become
    // last_scan().
    void begin_statement() {
        _hw.clear();
        _last = _current;
        _current = {};
        _denied.reset();
        ++_serial;
    }
    // Changes with every statement started: what a statement may cache (the catalog's
    // snapshot) is valid while it stays the same.
    uint64_t statement_serial() const { return _serial; }
    // The high watermark the running statement sees for a partition: the first call for
    // a partition captures `current`, later ones in the same statement return it, so a
    // self-join sees one consistent cut. Invariant: only offsets below it (appended:
    // the high watermark moves on append) are ever read.
    offset_t snapshot(const topic_partition& tp, offset_t current) {
        return _hw.try_emplace(tp, current).first->second;
    }
    scan_stats& current_scan() { return _current; }
    // The counters of the previous statement (the one before the running one).
    const scan_stats& last_scan() const { return _last; }

    // ---- Authorization ----
    void set_access(const security::gate* g, security::principal p) {
        _gate = g;
        _principal = std::move(p);
    }
    const security::principal& principal() const { return _principal; }
    // Whether the session's principal may act on `r`; always without a gate.
    bool allowed(security::action a, const security::resource& r) const {
        return !_gate || _gate->allowed(_principal, a, r);
    }
    // Changes whenever what allowed() answers may have changed; 0 without a gate.
    uint64_t access_generation() const { return _gate ? _gate->generation() : 0; }
    // Whether the topic's table is in the principal's kafka_topics: a topic it may
    // describe (the rule of Metadata and the system tables), or read, since a Deny on
    // KafkaDescribe does not take away KafkaRead (Kafka's Fetch needs only Read).
    bool may_see_topic(const std::string& topic) const {
        const security::resource r{security::resource_kind::topic, topic};
        return allowed(security::action::describe, r) || allowed(security::action::read, r);
    }
    // The error of a refused KafkaRead on a topic.
    std::string read_denial(const std::string& topic) const {
        const security::resource r{security::resource_kind::topic, topic};
        return "permission denied for topic \"" + topic + "\": " + _principal.to_string() +
               " may not " + std::string(security::action_name(security::action::read)) + " " +
               security::resource_name(r);
    }
    // Checks KafkaRead on a topic; on denial keeps the message for the statement's
    // error (the engine reports it as not_authorized, SQLSTATE 42501) and returns it.
    std::optional<std::string> check_topic_read(const std::string& topic) {
        if (allowed(security::action::read, {security::resource_kind::topic, topic}))
            return std::nullopt;
        _denied = read_denial(topic);
        return _denied;
    }
    // The denial the running statement (or the last prepare) ran into, if any.
    const std::optional<std::string>& denied() const { return _denied; }
    void clear_denied() { _denied.reset(); }

  private:
    const security::gate* _gate = nullptr;
    security::principal _principal;
    std::optional<std::string> _denied;
    std::map<topic_partition, offset_t> _hw;
    scan_stats _current;
    scan_stats _last;
    uint64_t _serial = 0;
};

}  // namespace sluice::sql
