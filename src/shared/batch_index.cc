#include "shared/batch_index.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "log/producer_state.h"
#include "protocol/record_batch.h"

namespace sluice::shared {

using partition_key = std::pair<std::string, int32_t>;

namespace {

using producer_key = std::pair<partition_key, int64_t>;  // partition, producer id
using steady = std::chrono::steady_clock;

// The idempotent producers of the commit's partitions, as the local log keeps them
// (log::producer_state), so that both modes check sequences by the same code. Built from
// the database's rows by applying each stored batch again.
struct producers {
    std::map<partition_key, log::producer_state> by_partition;
    std::set<producer_key> wanted;   // producers of the commit's batches
    std::set<producer_key> changed;  // to write back
};

protocol::batch_header header_of(int64_t producer_id, int16_t epoch, int32_t base_sequence,
                                 int32_t last_offset_delta, int64_t max_timestamp) {
    protocol::batch_header h;
    h.producer_id = producer_id;
    h.producer_epoch = epoch;
    h.base_sequence = base_sequence;
    h.last_offset_delta = last_offset_delta;
    h.max_timestamp = max_timestamp;
    return h;
}

// Adds one row "($n+1, ..., $n+k)" of a multi-row VALUES list and its k parameters.
void add_row(std::string& rows, std::vector<pg_param>& params,
             std::initializer_list<std::string> values) {
    rows += rows.empty() ? "(" : ", (";
    size_t i = 0;
    for (const auto& v : values) {
        rows += fmt::format("{}${}", i++ ? ", " : "", params.size() + 1);
        params.emplace_back(v);
    }
    rows += ")";
}

// Partitions grouped by topic and, for producers' rows, producer id: the key of a group.
using key_group = std::pair<std::string, int64_t>;  // topic id, producer id (-1: none)

// "((P.topic_id = $1 AND P.partition_id IN ($2, $3)) OR ...)": the rows of the groups'
// partitions (P. being `prefix`). PostgreSQL plans this far faster than a list of row
// values `(topic_id, partition_id) IN ((..), ..)`, which it expands into one OR branch
// per row (64 partitions: 0.1 against 2.4 ms of planning, measured), and finds the rows
// through the primary key either way.
std::string rows_where(const std::map<key_group, std::vector<int32_t>>& groups,
                       std::vector<pg_param>& params, std::string_view prefix = "") {
    std::string where = "(";
    for (const auto& [key, parts] : groups) {
        where += fmt::format("{}({}topic_id = ${}", where.size() > 1 ? " OR " : "", prefix,
                             params.size() + 1);
        params.emplace_back(key.first);
        if (key.second >= 0) {
            where += fmt::format(" AND {}producer_id = CAST(${} AS BIGINT)", prefix,
                                 params.size() + 1);
            params.emplace_back(std::to_string(key.second));
        }
        where += fmt::format(" AND {}partition_id IN (", prefix);
        for (size_t i = 0; i < parts.size(); ++i) {
            where += fmt::format("{}CAST(${} AS INTEGER)", i ? ", " : "", params.size() + 1);
            params.emplace_back(std::to_string(parts[i]));
        }
        where += "))";
    }
    return where + ")";
}

// rows_where over producers in partitions.
std::string producer_rows(const std::set<producer_key>& keys, std::vector<pg_param>& params,
                          std::string_view prefix = "") {
    std::map<key_group, std::vector<int32_t>> groups;
    for (const auto& [tp, id] : keys) groups[{tp.first, id}].push_back(tp.second);
    return rows_where(groups, params, prefix);
}

// The statements of one pipeline (pg_transaction::pipeline), each noted where its rows
// will be found.
struct planned {
    static constexpr size_t none = ~size_t{0};
    std::vector<pg_statement> statements;
    size_t add(std::string sql, std::vector<pg_param> params) {
        statements.push_back({std::move(sql), std::move(params)});
        return statements.size() - 1;
    }
};

// The commit's first round trip: the partitions' rows locked in key order (so that two
// brokers' commits over the same partitions queue rather than deadlock), then, each
// after the locks at its own snapshot (read committed), the broker's registration, the
// producers' state and the transactions open.
struct reads : planned {
    size_t lock = none, registration = none, states = none, batches = none, open = none;
};

void read_partitions(reads& r, const std::map<partition_key, int64_t>& next) {
    std::map<key_group, std::vector<int32_t>> groups;
    for (const auto& [key, _] : next) groups[{key.first, -1}].push_back(key.second);
    std::vector<pg_param> params;
    std::string which = rows_where(groups, params);
    r.lock = r.add("SELECT topic_id, partition_id, high_watermark, last_append_time_ms "
                   "FROM sluice_partitions WHERE " +
                       which + " ORDER BY topic_id, partition_id FOR UPDATE",
                   std::move(params));
}

// A broker whose lease passed was counted out by the others: what it began under that
// incarnation commits nothing. Read after the partitions' locks, so a renewal or a new
// incarnation committed before counts.
void read_registration(reads& r, const object_commit& commit) {
    if (commit.broker_incarnation <= 0) return;
    r.registration = r.add(
        "SELECT incarnation, CASE WHEN lease_expires_at > CURRENT_TIMESTAMP THEN 1 ELSE 0 END "
        "FROM sluice_brokers WHERE broker_id = CAST($1 AS INTEGER)",
        {std::to_string(commit.broker_id)});
}

result<void> check_registration(const pg_rows& row, const object_commit& commit) {
    if (row.size() == 1 && row.int64(0, 0) == commit.broker_incarnation && row.int64(0, 1) == 1)
        return {};
    return error{errc::in_use,
                 fmt::format("broker {} is no longer registered as incarnation {} with a live "
                             "lease: object {} commits nothing",
                             commit.broker_id, commit.broker_incarnation, commit.object_key)};
}

void read_producers(reads& r, const producers& ps) {
    if (ps.wanted.empty()) return;
    // The epochs apart: a producer whose last write here was a marker has no batches.
    std::vector<pg_param> params;
    std::string which = producer_rows(ps.wanted, params);
    r.states = r.add(
        "SELECT topic_id, partition_id, producer_id, producer_epoch FROM sluice_producer_state "
        "WHERE " +
            which,
        std::move(params));
    params.clear();
    which = producer_rows(ps.wanted, params, "b.");
    r.batches = r.add(
        "SELECT b.topic_id, b.partition_id, b.producer_id, s.producer_epoch, b.base_sequence, "
        "b.base_offset, b.last_offset, s.last_timestamp_ms "
        "FROM sluice_producer_batches b JOIN sluice_producer_state s "
        "ON s.topic_id = b.topic_id AND s.partition_id = b.partition_id "
        "AND s.producer_id = b.producer_id "
        "WHERE " +
            which + " ORDER BY b.base_offset",
        std::move(params));
}

// Rebuilds the producers' log::producer_state from their rows.
void load_producers(producers& ps, const pg_rows& st, const pg_rows& bt) {
    for (size_t r = 0; r < st.size(); ++r) {
        ps.by_partition[{st.text(r, 0), static_cast<int32_t>(st.int64(r, 1))}].apply_marker(
            st.int64(r, 2), static_cast<int16_t>(st.int64(r, 3)), true, -1, 0, 0);
    }
    for (size_t r = 0; r < bt.size(); ++r) {
        const int64_t base = bt.int64(r, 5);
        ps.by_partition[{bt.text(r, 0), static_cast<int32_t>(bt.int64(r, 1))}].apply(
            header_of(bt.int64(r, 2), static_cast<int16_t>(bt.int64(r, 3)),
                      static_cast<int32_t>(bt.int64(r, 4)),
                      static_cast<int32_t>(bt.int64(r, 6) - base), bt.int64(r, 7)),
            base, 0);
    }
}

batch_verdict to_verdict(log::sequence_verdict v) {
    switch (v) {
        case log::sequence_verdict::append:
            return batch_verdict::appended;
        case log::sequence_verdict::duplicate:
            return batch_verdict::duplicate;
        case log::sequence_verdict::invalid_epoch:
            return batch_verdict::invalid_epoch;
        case log::sequence_verdict::unknown_producer:
            return batch_verdict::unknown_producer;
        default:
            return batch_verdict::out_of_order;
    }
}

// Writes back the producers the commit changed: their state row (upserted) and their
// last batches (replaced).
void write_producers(planned& w, const producers& ps) {
    if (ps.changed.empty()) return;
    std::vector<pg_param> sp;
    std::string states;
    std::vector<pg_param> bp;
    std::string batches;
    for (const auto& [tp, id] : ps.changed) {
        const auto& e = ps.by_partition.at(tp).entries().at(id);
        add_row(
            states, sp,
            {tp.first, std::to_string(tp.second), std::to_string(id), std::to_string(e.epoch),
             std::to_string(e.last() ? e.last()->last_seq : -1), std::to_string(e.last_timestamp)});
        for (const auto& r : e.batches) {
            add_row(batches, bp,
                    {tp.first, std::to_string(tp.second), std::to_string(id),
                     std::to_string(r.first_seq), std::to_string(r.last_seq),
                     std::to_string(r.first_offset), std::to_string(r.last_offset)});
        }
    }
    w.add(
        "INSERT INTO sluice_producer_state (topic_id, partition_id, producer_id, producer_epoch, "
        "last_sequence, last_timestamp_ms) VALUES " +
            states +
            " ON CONFLICT (topic_id, partition_id, producer_id) DO UPDATE SET "
            "producer_epoch = EXCLUDED.producer_epoch, last_sequence = EXCLUDED.last_sequence, "
            "last_timestamp_ms = EXCLUDED.last_timestamp_ms",
        std::move(sp));
    std::vector<pg_param> dp;
    std::string which = producer_rows(ps.changed, dp);
    w.add("DELETE FROM sluice_producer_batches WHERE " + which, std::move(dp));
    if (batches.empty()) return;
    w.add(
        "INSERT INTO sluice_producer_batches (topic_id, partition_id, producer_id, "
        "base_sequence, last_sequence, base_offset, last_offset) VALUES " +
            batches,
        std::move(bp));
}

// The transactions open in the commit's partitions (sluice_txn_open), as the commit
// changes them: batches of a transaction open one, markers end it.
struct open_txns {
    std::map<producer_key, int64_t> first;  // (partition, producer) -> first offset
    std::set<producer_key> touched;
    struct aborted {
        producer_key key;
        int64_t first_offset;
        int64_t marker_offset;
    };
    std::vector<aborted> aborts;
};

void read_open(reads& r, const std::set<producer_key>& keys) {
    if (keys.empty()) return;
    std::vector<pg_param> params;
    std::string which = producer_rows(keys, params);
    r.open = r.add(
        "SELECT topic_id, partition_id, producer_id, first_offset FROM sluice_txn_open WHERE " +
            which,
        std::move(params));
}

void load_open(open_txns& o, const pg_rows& q) {
    for (size_t r = 0; r < q.size(); ++r)
        o.first[{{q.text(r, 0), static_cast<int32_t>(q.int64(r, 1))}, q.int64(r, 2)}] =
            q.int64(r, 3);
}

void write_open(planned& w, const open_txns& o) {
    if (o.touched.empty()) return;
    std::vector<pg_param> dp;
    std::string which = producer_rows(o.touched, dp);
    w.add("DELETE FROM sluice_txn_open WHERE " + which, std::move(dp));
    std::vector<pg_param> ip;
    std::string rows;
    for (const auto& k : o.touched) {
        auto it = o.first.find(k);
        if (it == o.first.end()) continue;
        add_row(rows, ip,
                {k.first.first, std::to_string(k.first.second), std::to_string(k.second),
                 std::to_string(it->second)});
    }
    if (!rows.empty()) {
        w.add("INSERT INTO sluice_txn_open (topic_id, partition_id, producer_id, first_offset) "
              "VALUES " +
                  rows,
              std::move(ip));
    }
    if (o.aborts.empty()) return;
    std::vector<pg_param> ap;
    std::string arows;
    for (const auto& a : o.aborts) {
        add_row(
            arows, ap,
            {a.key.first.first, std::to_string(a.key.first.second), std::to_string(a.marker_offset),
             std::to_string(a.key.second), std::to_string(a.first_offset)});
    }
    w.add("INSERT INTO sluice_txn_aborted (topic_id, partition_id, last_offset, producer_id, "
          "first_offset) VALUES " +
              arows,
          std::move(ap));
}

// What the commit knows of its partitions and producers, from the first round trip on.
struct commit_state {
    std::map<partition_key, int64_t> next;         // ordered: the lock order
    std::map<partition_key, int64_t> appended_at;  // last_append_time_ms
    producers ps;
    open_txns open;
};

// Reads what the commit checks, after locking its partitions' rows (one round trip).
result<commit_state> lock_and_read(pg_transaction& tx, const object_commit& commit,
                                   steady::time_point& locked_at) {
    commit_state cs;
    std::set<producer_key> txn_keys;
    for (const auto& b : commit.batches) {
        const partition_key tp{b.topic_id, b.partition};
        cs.next.emplace(tp, 0);
        if (b.producer_id >= 0) cs.ps.wanted.insert({tp, b.producer_id});
        if (b.transactional || b.marker >= 0) txn_keys.insert({tp, b.producer_id});
    }
    reads r;
    read_partitions(r, cs.next);
    read_registration(r, commit);
    read_producers(r, cs.ps);
    read_open(r, txn_keys);
    auto got = tx.pipeline(r.statements);
    if (!got) return got.err();
    const pg_rows& locked = (*got)[r.lock];
    locked_at = locked.received;
    if (locked.size() != cs.next.size()) {
        return error{errc::not_found,
                     fmt::format("{} of the {} partitions of object {} do not exist",
                                 cs.next.size() - locked.size(), cs.next.size(), commit.object_key)};
    }
    for (size_t i = 0; i < locked.size(); ++i) {
        const partition_key tp{locked.text(i, 0), static_cast<int32_t>(locked.int64(i, 1))};
        cs.next[tp] = locked.int64(i, 2);
        cs.appended_at[tp] = locked.int64(i, 3);
    }
    if (r.registration != reads::none) {
        if (auto ok = check_registration((*got)[r.registration], commit); !ok) return ok.err();
    }
    if (r.states != reads::none) load_producers(cs.ps, (*got)[r.states], (*got)[r.batches]);
    if (r.open != reads::none) load_open(cs.open, (*got)[r.open]);
    return cs;
}

// A transaction marker: written unless the producer has a newer epoch here (a marker
// written again after a coordinator moved or restarted). nullopt: appended at `hw`.
std::optional<batch_outcome> mark(commit_state& cs, const batch_append& b, int64_t hw) {
    const partition_key tp{b.topic_id, b.partition};
    auto& state = cs.ps.by_partition[tp];
    auto c = state.check_marker(b.producer_id, b.producer_epoch, -1);
    if (c.verdict != log::marker_check::kind::append)
        return batch_outcome{batch_verdict::invalid_epoch, -1, -1, std::move(c.reason)};
    state.apply_marker(b.producer_id, b.producer_epoch, b.marker == 1, -1, hw, 0);
    cs.ps.changed.insert({tp, b.producer_id});
    const producer_key k{tp, b.producer_id};
    auto it = cs.open.first.find(k);
    const int64_t first = it == cs.open.first.end() ? hw : it->second;
    if (it != cs.open.first.end()) cs.open.first.erase(it);
    cs.open.touched.insert(k);
    if (b.marker == 0) cs.open.aborts.push_back({k, first, hw});
    return std::nullopt;
}

// An idempotent producer's batch checked against its state: nullopt when appended at `hw`.
std::optional<batch_outcome> check_sequence(commit_state& cs, const batch_append& b, int64_t hw) {
    const partition_key tp{b.topic_id, b.partition};
    auto h = header_of(b.producer_id, b.producer_epoch, b.base_sequence, b.record_count - 1,
                       b.max_timestamp_ms);
    auto& state = cs.ps.by_partition[tp];
    auto c = state.check(h);
    if (c.verdict == log::sequence_verdict::duplicate)
        return batch_outcome{
            batch_verdict::duplicate, c.original.first_offset, c.original.last_offset, {}};
    if (c.verdict != log::sequence_verdict::append)
        return batch_outcome{to_verdict(c.verdict), -1, -1, std::move(c.reason)};
    state.apply(h, hw, 0);
    cs.ps.changed.insert({tp, b.producer_id});
    if (b.transactional) {
        const producer_key k{tp, b.producer_id};
        cs.open.first.emplace(k, hw);  // the transaction's first offset here
        cs.open.touched.insert(k);
    }
    return std::nullopt;
}

// The rows of the accepted batches for sluice_batches, one array per column in
// PostgreSQL's array text form (`{v1,v2,...}`: hex digits and integers, which need no
// quoting), inserted by one statement with `unnest` whatever their number. Its text and
// its ten parameters are the same for every commit, where a multi-row VALUES list sends,
// parses and plans ten parameters per row (and needs several statements past 6,553 rows,
// PostgreSQL's 65,535 parameters).
class batch_rows {
  public:
    void add(std::initializer_list<int64_t> values, const std::string& topic_id) {
        append(_arrays[0], '"' + topic_id + '"');
        size_t i = 1;
        for (int64_t v : values) append(_arrays[i++], std::to_string(v));
        ++_rows;
    }
    void insert(planned& w, const std::string& object_key) {
        if (_rows == 0) return;
        std::vector<pg_param> params{object_key};
        for (auto& a : _arrays) params.emplace_back(a + "}");
        w.add("INSERT INTO sluice_batches (topic_id, partition_id, base_offset, last_offset, "
              "object_key, byte_position, byte_size, max_timestamp_ms, record_count, "
              "append_time_ms) "
              "SELECT v.t, v.p, v.b, v.l, $1, v.pos, v.size, v.ts, v.n, v.at "
              "FROM unnest(CAST($2 AS TEXT[]), CAST($3 AS INTEGER[]), CAST($4 AS BIGINT[]), "
              "CAST($5 AS BIGINT[]), CAST($6 AS BIGINT[]), CAST($7 AS INTEGER[]), "
              "CAST($8 AS BIGINT[]), CAST($9 AS INTEGER[]), CAST($10 AS BIGINT[])) "
              "AS v (t, p, b, l, pos, size, ts, n, at)",
              std::move(params));
    }

  private:
    static void append(std::string& array, const std::string& v) {
        array += array.empty() ? "{" : ",";
        array += v;
    }
    // topic_id, partition_id, base_offset, last_offset, byte_position, byte_size,
    // max_timestamp_ms, record_count, append_time_ms
    std::array<std::string, 9> _arrays;
    size_t _rows = 0;
};

// Gives each batch its verdict and offsets, and adds the rows of the accepted ones to
// `w` (one INSERT into sluice_batches). Returns the outcomes, in the order of the batches.
std::vector<batch_outcome> assign(commit_state& cs, const object_commit& commit, planned& w) {
    std::vector<batch_outcome> out;
    batch_rows rows;
    for (const auto& b : commit.batches) {
        const partition_key tp{b.topic_id, b.partition};
        int64_t& hw = cs.next[tp];
        auto refused = b.marker >= 0          ? mark(cs, b, hw)
                       : b.producer_id >= 0 ? check_sequence(cs, b, hw)
                                            : std::nullopt;
        if (refused) {
            out.push_back(std::move(*refused));
            continue;
        }
        // The append time (and LogAppendTime's stamp, the same time): the broker's clock
        // at its window, never below the partition's last one (another broker's clock
        // may be ahead, or its window committed first).
        int64_t max_ts = b.max_timestamp_ms;
        int64_t append_time = -1;
        if (b.log_append_time || b.append_time_ms >= 0) {
            int64_t& last = cs.appended_at[tp];
            append_time = std::max(b.log_append_time ? max_ts : b.append_time_ms, last);
            last = append_time;
            if (b.log_append_time) max_ts = append_time;
        }
        out.push_back({batch_verdict::appended,
                       hw,
                       hw + b.record_count - 1,
                       {},
                       b.log_append_time ? max_ts : -1,
                       append_time});
        rows.add({b.partition, hw, hw + b.record_count - 1,
                  static_cast<int64_t>(b.byte_position), b.byte_size, max_ts, b.record_count,
                  append_time},
                 b.topic_id);
        hw += b.record_count;
    }
    rows.insert(w, commit.object_key);
    return out;
}

// Moves the partitions' high watermarks and last append times, and NOTIFYs them. The
// topic ids are cast to the column's type: compared as TEXT, the join could not use the
// primary key and read every partition of the cluster (42 ms at 20,000 partitions,
// against 0.4 ms through the index).
void write_partitions(planned& w, const commit_state& cs) {
    std::vector<pg_param> up;
    std::string hws;
    std::string note;
    for (const auto& [key, hw] : cs.next) {
        size_t n = up.size();
        hws += fmt::format(
            "{}(CAST(${} AS CHAR(32)), CAST(${} AS INTEGER), CAST(${} AS BIGINT), "
            "CAST(${} AS BIGINT))",
            hws.empty() ? "" : ", ", n + 1, n + 2, n + 3, n + 4);
        up.emplace_back(key.first);
        up.emplace_back(std::to_string(key.second));
        up.emplace_back(std::to_string(hw));
        up.emplace_back(std::to_string(cs.appended_at.at(key)));
        note += fmt::format("{}:{}:{}\n", key.first, key.second, hw);
    }
    w.add("UPDATE sluice_partitions SET high_watermark = v.hw, last_append_time_ms = v.at "
          "FROM (VALUES " +
              hws +
              ") AS v (topic_id, partition_id, hw, at) "
              "WHERE sluice_partitions.topic_id = v.topic_id "
              "AND sluice_partitions.partition_id = v.partition_id",
          std::move(up));
    if (note.size() >= 8000) note.clear();
    w.statements.push_back(pg_transaction::notify_statement(commit_channel, note));
}

}  // namespace

// Two round trips (pg_transaction::pipeline): the locks and reads, then every write
// and COMMIT. The results of both are small (rows of the commit's partitions and
// producers, command tags), so sending a pipeline whole before reading cannot fill
// the connection's buffers both ways.
result<std::vector<batch_outcome>> commit_object(pg_database& db, const object_commit& commit,
                                                 commit_timings* timings) {
    if (commit.batches.empty())
        return error{errc::invalid_argument, "an object commit with no batches"};
    return db.transact<std::vector<batch_outcome>>(
        isolation_level::read_committed,
        [&](pg_transaction& tx) -> result<std::vector<batch_outcome>> {
            steady::time_point locked_at;
            auto cs = lock_and_read(tx, commit, locked_at);
            if (!cs) return cs.err();
            planned w;
            w.add("INSERT INTO sluice_objects (object_key, size_bytes, created_by, created_at, "
                  "state, state_changed_at) "
                  "VALUES ($1, $2, $3, CURRENT_TIMESTAMP, 'live', CURRENT_TIMESTAMP)",
                  {commit.object_key, std::to_string(commit.size), std::to_string(commit.broker_id)});
            auto out = assign(*cs, commit, w);
            // Every batch refused: the object stays unreferenced (for the cleanup).
            if (w.statements.size() > 1) {
                write_producers(w, cs->ps);
                write_open(w, cs->open);
                write_partitions(w, *cs);
            }
            auto done = tx.pipeline(w.statements, true);
            if (!done) return done.err();
            if (timings) {
                const auto written = (*done)[done->size() - 2].received;
                *timings = {locked_at - tx.began(), written - locked_at,
                            done->back().received - written};
            }
            return out;
        });
}

void restore_batch(uint8_t* batch, size_t size, int64_t base_offset, int64_t max_timestamp_ms) {
    protocol::set_base_offset(batch, base_offset);
    if (auto h = protocol::read_batch_header(bytes_view(batch, size));
        h && h->ts_type() == protocol::timestamp_type::log_append_time &&
        h->max_timestamp != max_timestamp_ms)
        protocol::set_log_append_time(batch, size, max_timestamp_ms);
}

result<void> create_topic(pg_database& db, const std::string& topic_id, const std::string& name,
                          int32_t partitions) {
    return db.transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
        auto t = tx.exec(
            "INSERT INTO sluice_topics (topic_id, topic_name, partition_count, created_at, state) "
            "VALUES ($1, $2, $3, CURRENT_TIMESTAMP, 'live')",
            {topic_id, name, std::to_string(partitions)});
        if (!t) return t.err();
        for (int32_t p = 0; p < partitions; ++p) {
            auto r = tx.exec(
                "INSERT INTO sluice_partitions (topic_id, partition_id, log_start_offset, "
                "high_watermark, leader_epoch) VALUES ($1, $2, 0, 0, 0)",
                {topic_id, std::to_string(p)});
            if (!r) return r.err();
        }
        return {};
    });
}

}  // namespace sluice::shared
