#include "sql/topic_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "catalog/metadata_store.h"
#include "common/logging.h"
#include "log/log_manager.h"
#include "log/record_cursor.h"
#include "log/store_cursor.h"
#include "protocol/record_reader.h"
#include "sql/json_text.h"
#include "sql/partition_source.h"
#include "sql/row_table.h"
#include "sql/sql_text.h"
#include "sql/time_text.h"
#include "sql/topic_names.h"
#include "sql/topic_scan_range.h"

namespace sluice::sql {

namespace {

constexpr const char* module_name = "sluice_topic";

enum col : int {
    c_partition,
    c_offset,
    c_ts_producer,
    c_ts_broker,
    c_key,
    c_value,
    c_headers,
    // Hidden (not in SELECT *): the two timestamps as timestamptz values, for tools
    // that draw time axes (docs/sql-pg.md).
    c_ts_producer_tz,
    c_ts_broker_tz,
};

// Planner estimates: a topic is assumed large, and each pushed-down constraint is assumed
// to cut it down; only the order of the estimates matters to SQLite.
constexpr double full_scan_rows = 1e7;

struct topic_vtab {
    sqlite3_vtab base{};
    topic_tables* owner = nullptr;
    std::string topic;
};

struct topic_cursor {
    sqlite3_vtab_cursor base{};
    topic_tables* owner = nullptr;
    std::string topic;
    // Held for the scan: the partitions stay valid even if the topic is deleted
    // meanwhile (they then answer not_found).
    std::shared_ptr<log::topic_state> state;

    range partitions, offsets, ts_producer, ts_broker;
    int32_t partition = -1;  // the partition being scanned
    log::partition_log* log = nullptr;
    log::record_cursor records;  // over the partition's range
    // Shared mode (owner->partitions): the topic's partition count when the scan began,
    // and the partition being scanned through the partition-log interface.
    int32_t partition_count = 0;
    log::partition_store* store = nullptr;
    log::store_cursor store_records;
    bool eof = false;

    bool shared() const { return owner->partitions != nullptr; }
    bool reading() const { return shared() ? store != nullptr : log != nullptr; }
    const protocol::record_ref& rec() const {
        return shared() ? store_records.record() : records.record();
    }
};

int set_error(sqlite3_vtab* t, const std::string& msg) {
    sqlite3_free(t->zErrMsg);
    t->zErrMsg = sqlite3_mprintf("%s", msg.c_str());
    return SQLITE_ERROR;
}

// A storage error during a scan. A topic deleted under the scan reads as an unknown
// table, which is what the next statement would see.
int scan_error(topic_cursor& c, const error& e) {
    const bool removed = c.shared() ? !c.owner->topics.find_topic(c.topic).has_value()
                                    : !c.state || c.state->removed.load();
    if (removed)
        return set_error(c.base.pVtab, fmt::format("no such table: kafka_topics.{} (the topic was "
                                                   "deleted during the query)",
                                                   c.topic));
    return set_error(c.base.pVtab, fmt::format("{}-{}: {}", c.topic, c.partition, e.message));
}

int create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char**) {
    int rc = sqlite3_declare_vtab(db,
                                  "CREATE TABLE x(partition INTEGER, offset INTEGER, "
                                  "timestamp_producer INTEGER, timestamp_broker INTEGER, key BLOB, "
                                  "value BLOB, headers TEXT, "
                                  "timestamp_producer_tz TIMESTAMPTZ HIDDEN, "
                                  "timestamp_broker_tz TIMESTAMPTZ HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    auto* t = new topic_vtab;
    t->owner = static_cast<topic_tables*>(aux);
    t->topic = argc > 2 ? topic_of_table(argv[2]) : "";
    *out = &t->base;
    return SQLITE_OK;
}

int disconnect(sqlite3_vtab* t) {
    delete reinterpret_cast<topic_vtab*>(t);
    return SQLITE_OK;
}

char op_code(unsigned char op) {
    switch (op) {
        case SQLITE_INDEX_CONSTRAINT_EQ:
            return '=';
        case SQLITE_INDEX_CONSTRAINT_GT:
            return '>';
        case SQLITE_INDEX_CONSTRAINT_GE:
            return 'g';
        case SQLITE_INDEX_CONSTRAINT_LT:
            return '<';
        case SQLITE_INDEX_CONSTRAINT_LE:
            return 'l';
        default:
            return 0;
    }
}

// Every comparison on partition, offset and the timestamps is handed to xFilter, which
// narrows the scan with it. Unless the scan applies it exactly (below), SQLite still
// checks each row, so a scan may read more than the predicate needs but never returns
// a row it should not.
int best_index(sqlite3_vtab* t, sqlite3_index_info* info) {
    // Shared mode's scan does not narrow with a bound on timestamp_broker (it has no
    // append-time index): SQLite checks it row by row.
    const bool shared = reinterpret_cast<topic_vtab*>(t)->owner->partitions != nullptr;
    std::string plan;
    int argv = 0;
    double rows = full_scan_rows;
    bool partition_eq = false;
    for (int i = 0; i < info->nConstraint; ++i) {
        const auto& c = info->aConstraint[i];
        const char op = op_code(c.op);
        if (!c.usable || !op || c.iColumn < c_partition || c.iColumn > c_ts_broker) continue;
        info->aConstraintUsage[i].argvIndex = ++argv;
        // The scan applies an integer bound on partition, offset or timestamp_broker
        // exactly (append times never decrease along a partition), so SQLite need not
        // check it again row by row. Other values, and parameters not known yet, are
        // checked by SQLite as well.
        sqlite3_value* rhs = nullptr;
        if (c.iColumn != c_ts_producer && !(shared && c.iColumn == c_ts_broker) &&
            sqlite3_vtab_rhs_value(info, i, &rhs) == SQLITE_OK &&
            sqlite3_value_type(rhs) == SQLITE_INTEGER)
            info->aConstraintUsage[i].omit = 1;
        plan += static_cast<char>('0' + c.iColumn);
        plan += op;
        rows /= op == '=' ? (c.iColumn == c_partition ? 4 : 1000) : 3;
        if (c.iColumn == c_partition && op == '=') partition_eq = true;
    }
    info->idxStr = sqlite3_mprintf("%s", plan.c_str());
    info->needToFreeIdxStr = 1;
    info->estimatedRows = static_cast<sqlite3_int64>(std::max(rows, 1.0));
    info->estimatedCost = std::max(rows, 1.0);
    // Rows come in partition order, then offset order.
    const auto& ob = info->aOrderBy;
    if ((info->nOrderBy == 1 && ob[0].iColumn == c_partition && !ob[0].desc) ||
        (info->nOrderBy == 2 && ob[0].iColumn == c_partition && !ob[0].desc &&
         ob[1].iColumn == c_offset && !ob[1].desc) ||
        (info->nOrderBy == 1 && partition_eq && ob[0].iColumn == c_offset && !ob[0].desc))
        info->orderByConsumed = 1;
    return SQLITE_OK;
}

int open(sqlite3_vtab* t, sqlite3_vtab_cursor** out) {
    auto* vt = reinterpret_cast<topic_vtab*>(t);
    // The session's authorizer refused the statement already if its principal may not
    // read the topic; checked again here, when the statement runs, since a prepared
    // statement may outlive a policy that allowed it.
    if (auto why = vt->owner->ctx.check_topic_read(vt->topic)) {
        set_error(t, *why);
        return SQLITE_AUTH;
    }
    auto* c = new topic_cursor;
    c->owner = vt->owner;
    c->topic = vt->topic;
    *out = &c->base;
    return SQLITE_OK;
}

int close(sqlite3_vtab_cursor* c) {
    delete reinterpret_cast<topic_cursor*>(c);
    return SQLITE_OK;
}

// Narrows r by "column <op> v". A value that is not a number narrows nothing: SQLite's
// own check of the row decides (a comparison with NULL empties the range, as it
// matches no row).
void narrow(range& r, char op, sqlite3_value* v) {
    const int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_NULL) {
        r.lo = 1;
        r.hi = 0;
        return;
    }
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) return;
    double d = sqlite3_value_double(v);
    int64_t i = sqlite3_value_int64(v);
    const bool integral = type == SQLITE_INTEGER;
    if (!integral && (std::isnan(d) || std::fabs(d) > 9e18)) return;
    auto floor_i = integral ? i : static_cast<int64_t>(std::floor(d));
    auto ceil_i = integral ? i : static_cast<int64_t>(std::ceil(d));
    switch (op) {
        case '=':
            if (!integral && floor_i != ceil_i) {
                r.lo = 1;
                r.hi = 0;
                return;
            }
            r.lo = std::max(r.lo, floor_i);
            r.hi = std::min(r.hi, floor_i);
            break;
        case '>':
            r.lo = std::max(r.lo,
                            floor_i == std::numeric_limits<int64_t>::max() ? floor_i : floor_i + 1);
            break;
        case 'g':
            r.lo = std::max(r.lo, ceil_i);
            break;
        case '<':
            r.hi =
                std::min(r.hi, ceil_i == std::numeric_limits<int64_t>::min() ? ceil_i : ceil_i - 1);
            break;
        case 'l':
            r.hi = std::min(r.hi, floor_i);
            break;
        default:
            break;
    }
}

// Shared mode's enter_partition: the offsets of partition p within the constraints,
// read through the partition-log interface.
result<bool> enter_shared_partition(topic_cursor& c, int32_t p) {
    auto& owner = *c.owner;
    c.store = owner.partitions->partition(c.topic, p);
    if (!c.store) return false;
    const offset_t hw = owner.ctx.snapshot({c.topic, p}, c.store->last_stable_offset());
    auto span = store_span(*c.store, hw, c.offsets, c.ts_producer);
    if (!span) return span.err();
    if (!*span) return false;
    if (auto r = c.store_records.open(c.store, (*span)->first, (*span)->second); !r) return r.err();
    ++owner.ctx.current_scan().partitions_scanned;
    return true;
}

// Positions the cursor on partition p: computes where its records start and end under
// the constraints. false (with no error) when the partition has nothing to return.
result<bool> enter_partition(topic_cursor& c, int32_t p) {
    auto& owner = *c.owner;
    if (c.shared()) return enter_shared_partition(c, p);
    c.log = owner.logs->partition(*c.state, p);
    if (!c.log) return false;
    // What a READ_COMMITTED consumer sees: up to the last stable offset, without the
    // records of aborted transactions (and never a transaction marker).
    const offset_t hw = owner.ctx.snapshot({c.topic, p}, c.log->last_stable_offset());
    auto span = partition_span(*c.log, hw, c.offsets, c.ts_producer, c.ts_broker);
    if (!span) return span.err();
    if (!*span) return false;
    if (auto r = c.records.open_committed(c.log, (*span)->first, (*span)->second); !r)
        return r.err();
    ++owner.ctx.current_scan().partitions_scanned;
    return true;
}

// Adds what the cursor read since the last call to the statement's scan counters.
void count_reads(topic_cursor& c) {
    auto& to = c.owner->ctx.current_scan();
    if (c.shared()) {
        auto& from = c.store_records.stats();
        to.batches_read += from.batches_read;
        to.bytes_read += from.bytes_read;
        to.records_read += from.records_read;
        from = {};
        return;
    }
    auto& from = c.records.stats();
    to.segments_read += from.segments_read;
    to.batches_read += from.batches_read;
    to.bytes_read += from.bytes_read;
    to.records_read += from.records_read;
    from = {};
}

// Moves to the next record to return; sets eof at the end of the scan.
int advance(topic_cursor& c) {
    for (;;) {
        if (c.reading()) {
            auto more = c.shared() ? c.store_records.next() : c.records.next();
            count_reads(c);
            if (!more) return scan_error(c, more.err());
            if (*more) return SQLITE_OK;
            c.log = nullptr;
            c.store = nullptr;
        }
        // The next partition with something to return.
        const int32_t p = c.partition + 1;
        const bool exists =
            c.shared() ? p < c.partition_count : c.owner->logs->partition(*c.state, p) != nullptr;
        if (p > c.partitions.hi || !exists) {
            c.eof = true;
            return SQLITE_OK;
        }
        c.partition = p;
        auto entered = enter_partition(c, p);
        if (!entered) return scan_error(c, entered.err());
        if (!*entered) {
            c.log = nullptr;
            c.store = nullptr;
        }
    }
}

int filter(sqlite3_vtab_cursor* cur, int, const char* plan, int argc, sqlite3_value** argv) {
    auto* c = reinterpret_cast<topic_cursor*>(cur);
    c->partitions = c->offsets = c->ts_producer = c->ts_broker = range{};
    for (int i = 0; plan && plan[2 * i] && i < argc; ++i) {
        range* r = nullptr;
        switch (plan[2 * i] - '0') {
            case c_partition:
                r = &c->partitions;
                break;
            case c_offset:
                r = &c->offsets;
                break;
            case c_ts_producer:
                r = &c->ts_producer;
                break;
            case c_ts_broker:
                r = &c->ts_broker;
                break;
            default:
                continue;
        }
        narrow(*r, plan[2 * i + 1], argv[i]);
    }
    c->partitions.lo = std::max<int64_t>(c->partitions.lo, 0);
    c->partitions.hi = std::min<int64_t>(c->partitions.hi, std::numeric_limits<int32_t>::max() - 1);
    c->eof = false;
    c->records.close();
    c->store_records.close();
    c->log = nullptr;
    c->store = nullptr;
    if (c->shared()) {
        const auto t = c->owner->topics.find_topic(c->topic);
        if (!t) return scan_error(*c, error{errc::not_found, "deleted"});
        c->partition_count = t->partitions;
    } else {
        c->state = c->owner->logs->topic(c->topic);
        if (!c->state) return scan_error(*c, error{errc::not_found, "deleted"});
    }
    if (c->partitions.empty() || c->offsets.empty() || c->ts_producer.empty() ||
        c->ts_broker.empty()) {
        c->eof = true;
        return SQLITE_OK;
    }
    c->partition = static_cast<int32_t>(c->partitions.lo) - 1;
    return advance(*c);
}

int next(sqlite3_vtab_cursor* cur) {
    return advance(*reinterpret_cast<topic_cursor*>(cur));
}

int eof(sqlite3_vtab_cursor* cur) {
    return reinterpret_cast<topic_cursor*>(cur)->eof;
}

void result_bytes(sqlite3_context* ctx, const std::optional<bytes_view>& b) {
    if (!b) return sqlite3_result_null(ctx);
    sqlite3_result_blob64(ctx, b->data(), b->size(), SQLITE_TRANSIENT);
}

void result_timestamp(sqlite3_context* ctx, int64_t ms) {
    const std::string text = format_timestamp(ms * 1000);
    sqlite3_result_text(ctx, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

int column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int i) {
    auto& c = *reinterpret_cast<topic_cursor*>(cur);
    switch (i) {
        case c_partition:
            sqlite3_result_int64(ctx, c.partition);
            break;
        case c_offset:
            sqlite3_result_int64(ctx, c.rec().offset);
            break;
        case c_ts_producer:
            sqlite3_result_int64(ctx, c.rec().timestamp);
            break;
        case c_ts_broker: {
            if (c.shared()) {
                // The batch's append time from the batch index (NULL for batches
                // committed before the shared catalog's version 10).
                if (auto t = c.store_records.append_time())
                    sqlite3_result_int64(ctx, *t);
                else
                    sqlite3_result_null(ctx);
                break;
            }
            auto t = c.records.append_time();
            if (!t) return scan_error(c, t.err());
            sqlite3_result_int64(ctx, *t);
            break;
        }
        case c_ts_producer_tz:
            result_timestamp(ctx, c.rec().timestamp);
            break;
        case c_ts_broker_tz: {
            if (c.shared()) {
                // The batch's append time from the batch index (NULL for batches
                // committed before the shared catalog's version 10).
                if (auto t = c.store_records.append_time())
                    result_timestamp(ctx, *t);
                else
                    sqlite3_result_null(ctx);
                break;
            }
            auto t = c.records.append_time();
            if (!t) return scan_error(c, t.err());
            result_timestamp(ctx, *t);
            break;
        }
        case c_key:
            result_bytes(ctx, c.rec().key);
            break;
        case c_value:
            result_bytes(ctx, c.rec().value);
            break;
        case c_headers: {
            if (c.rec().header_count == 0) {  // most records: no string to build
                sqlite3_result_text(ctx, "[]", 2, SQLITE_STATIC);
                break;
            }
            std::string json;
            const bool ok = append_headers_json(json, c.rec());
            if (!ok)
                return set_error(cur->pVtab, fmt::format("{}-{} offset {}: malformed headers",
                                                         c.topic, c.partition, c.rec().offset));
            sqlite3_result_text64(ctx, json.data(), json.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
            break;
        }
        default:
            sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
    const auto& c = *reinterpret_cast<topic_cursor*>(cur);
    // Unique within the table: 16 bits of partition above 47 bits of offset.
    *out = (static_cast<int64_t>(c.partition) << 47) ^ c.rec().offset;
    return SQLITE_OK;
}

// Read-only: no xUpdate, so SQLite itself refuses writes.
const sqlite3_module topic_module = {.iVersion = 0,
                                     .xCreate = create,
                                     .xConnect = create,
                                     .xBestIndex = best_index,
                                     .xDisconnect = disconnect,
                                     .xDestroy = disconnect,
                                     .xOpen = open,
                                     .xClose = close,
                                     .xFilter = filter,
                                     .xNext = next,
                                     .xEof = eof,
                                     .xColumn = column,
                                     .xRowid = rowid};

}  // namespace

outcome<bool> topic_tables::install(sqlite3* db) {
    if (sqlite3_create_module_v2(db, module_name, &topic_module, this, nullptr) != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("{}: {}", module_name, sqlite3_errmsg(db))};
    return sync(db);
}

namespace {

// The table name of each topic in `want`: its own unless SQLite reserves it or another
// topic in `want` folds to the same name (sql/topic_names.h).
std::map<std::string, std::string> table_names(const std::set<std::string>& want) {
    std::map<std::string, size_t> folded;
    for (const auto& t : want) ++folded[to_lower(t)];
    std::map<std::string, std::string> out;
    for (const auto& t : want)
        out[t] = reserved_table_name(t) || folded[to_lower(t)] > 1 ? escaped_table_name(t) : t;
    return out;
}

}  // namespace

outcome<bool> topic_tables::sync(sqlite3* db) {
    const uint64_t gen = topics.generation();
    const uint64_t access_gen = ctx.access_generation();
    const std::string& user = ctx.principal().user;
    if (gen == _generation && access_gen == _access_generation && user == _user) return true;
    std::set<std::string> want;
    for (const auto& t : topics.list_topics())
        if (ctx.may_see_topic(t.name)) want.insert(t.name);
    const auto names = table_names(want);
    // Drop first: a topic's table may take the name another topic's table had.
    for (auto it = _tables.begin(); it != _tables.end();) {
        const auto w = names.find(it->first);
        if (w != names.end() && w->second == it->second) {
            ++it;
            continue;
        }
        if (auto r = exec_sql(db, "DROP TABLE kafka_topics." + quote_ident(it->second)); !r)
            log_warn("sql", "topic {}: cannot drop its table {}: {}", it->first, it->second,
                     r.error().message);
        it = _tables.erase(it);
    }
    for (const auto& [topic, table] : names) {
        if (_tables.count(topic)) continue;
        if (auto r = exec_sql(db, fmt::format("CREATE VIRTUAL TABLE kafka_topics.{} USING {}",
                                              quote_ident(table), module_name));
            !r) {
            if (_failed.insert(topic).second)
                log_warn("sql", "topic {}: no SQL table for it, the other topics are served: {}",
                         topic, r.error().message);
            continue;
        }
        _failed.erase(topic);
        _tables.emplace(topic, table);
    }
    _escaped = static_cast<size_t>(std::count_if(
        _tables.begin(), _tables.end(), [](const auto& t) { return t.first != t.second; }));
    _generation = gen;
    _access_generation = access_gen;
    _user = user;
    return true;
}

std::optional<std::string> topic_tables::table_for(std::string_view topic) const {
    const auto it = _tables.find(topic);
    if (it == _tables.end()) return std::nullopt;
    return it->second;
}

}  // namespace sluice::sql
