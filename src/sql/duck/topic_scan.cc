#include "sql/duck/topic_scan.h"

#include "sql/duck/sluice_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <mutex>
#include <string>

#include "catalog/metadata_store.h"
#include "duckdb.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/planner/expression/bound_between_expression.hpp"
#include "duckdb/planner/expression/bound_columnref_expression.hpp"
#include "duckdb/planner/expression/bound_comparison_expression.hpp"
#include "duckdb/planner/expression/bound_constant_expression.hpp"
#include "duckdb/planner/expression/bound_operator_expression.hpp"
#include "duckdb/planner/operator/logical_get.hpp"
#include "duckdb/storage/statistics/node_statistics.hpp"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "log/record_cursor.h"
#include "log/store_cursor.h"
#include "protocol/record_reader.h"
#include "sql/json_text.h"
#include "sql/partition_source.h"
#include "sql/topic_scan_range.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

enum col : d::idx_t {
    c_partition,
    c_offset,
    c_ts_producer,
    c_ts_broker,
    c_key,
    c_value,
    c_headers,
    // Virtual (hidden) columns: not in SELECT *, read when named. Their DuckDB column ids
    // start at VIRTUAL_COLUMN_START; global_state::columns holds these instead.
    c_key_text,
    c_value_text,
    c_ts_producer_tz,
    c_ts_broker_tz,
    c_row_id,
    // What DuckDB asks for when it needs rows but no column (count(*)): nothing is
    // decoded (scan_count).
    c_empty,
};
constexpr d::idx_t regular_columns = c_key_text;

// What a reference to a topic in a statement reads: the topic, the session it was bound
// on, and the ranges the WHERE clause allows (narrowed by pushdown_filters before the
// scan starts). A prepared statement keeps it across executions: the cut is taken when
// the scan starts (global_state).
struct bind_data final : d::TableFunctionData {
    std::string topic;
    topic_source src;
    // Single-node mode, held for the scan: the partitions stay valid even if the topic is
    // deleted meanwhile (they then answer not_found). Shared mode has none: the shared
    // log's partitions live as long as the log.
    std::shared_ptr<log::topic_state> state;
    scan_session session;
    range partitions, offsets, ts_producer, ts_broker;

    d::unique_ptr<d::FunctionData> Copy() const override { return d::make_uniq<bind_data>(*this); }
    bool Equals(const d::FunctionData& other) const override {
        const auto& o = other.Cast<bind_data>();
        return topic == o.topic && state == o.state && partitions == o.partitions &&
               offsets == o.offsets && ts_producer == o.ts_producer && ts_broker == o.ts_broker;
    }
};

// Partitions handed out to DuckDB's threads, one at a time.
struct global_state final : d::GlobalTableFunctionState {
    std::mutex mu;
    int32_t next_partition = 0;
    int32_t last_partition = -1;
    std::vector<d::column_t> columns;  // the projected columns (enum col), in output order
    std::vector<offset_t> cut;         // per partition: the last stable offset the statement sees
    bool count_only = false;           // no column read: rows are counted, not decoded
    d::idx_t MaxThreads() const override {
        return static_cast<d::idx_t>(std::max(1, last_partition - next_partition + 1));
    }
};

struct local_state final : d::LocalTableFunctionState {
    int32_t partition = -1;
    log::partition_log* log = nullptr;  // null between partitions
    log::record_cursor records;
    // Shared mode: the partition through the partition-log interface instead.
    log::partition_store* store = nullptr;
    log::store_cursor store_records;
    int64_t counted = 0;  // count_only: rows counted and not returned yet

    bool reading() const { return log || store; }
    const protocol::record_ref& rec() const {
        return store ? store_records.record() : records.record();
    }
};

// Partition p of the scan's topic through the interface both modes share; null past the
// last one.
log::partition_store* partition_of(const bind_data& b, int32_t p) {
    if (b.src.shared()) return b.src.partitions->partition(b.topic, p);
    return b.src.logs->partition(*b.state, p);
}

bool topic_removed(const bind_data& b) {
    if (b.src.shared()) return !b.src.topics->find_topic(b.topic).has_value();
    return b.state->removed.load();
}

[[noreturn]] void scan_error(const bind_data& b, int32_t p, const error& e) {
    if (topic_removed(b))
        throw d::CatalogException(
            fmt::format("no such topic: {} (the topic was deleted during the query)", b.topic));
    throw d::IOException(fmt::format("{}-{}: {}", b.topic, p, e.message));
}

d::unique_ptr<d::FunctionData> bind(d::ClientContext& context, d::TableFunctionBindInput& input,
                                    d::vector<d::LogicalType>& types, d::vector<d::string>& names,
                                    const topic_source& src, const session_finder& find) {
    const auto s = find(context);
    if (!s.ctx) throw d::PermissionException("kafka_topic: only a Sluice SQL session reads topics");
    if (input.inputs.empty() || input.inputs[0].IsNull())
        throw d::InvalidInputException("kafka_topic: the topic's name is required");
    auto b = d::make_uniq<bind_data>();
    b->topic = input.inputs[0].GetValue<std::string>();
    // Authorization first: a topic the principal may not read is refused whether or not
    // it exists, as Kafka's Fetch does.
    {
        std::lock_guard lk(*s.mu);
        if (auto why = s.ctx->check_topic_read(b->topic)) throw d::PermissionException(*why);
    }
    b->src = src;
    b->session = s;
    if (!src.shared()) b->state = src.logs->topic(b->topic);
    const bool exists = src.shared() ? src.topics->find_topic(b->topic).has_value()
                                     : b->state && !b->state->removed.load();
    if (!exists) throw d::CatalogException(fmt::format("no such topic: {}", b->topic));
    topic_columns(types, names);
    return b;
}

// The hidden columns, as the SQLite engine's topic tables have them (docs/sql.md).
d::virtual_column_map_t virtual_columns(d::ClientContext&, d::optional_ptr<d::FunctionData>) {
    d::virtual_column_map_t m;
    const auto v = d::VIRTUAL_COLUMN_START;
    m[v + c_key_text - regular_columns] = d::TableColumn("key_text", d::LogicalType::VARCHAR);
    m[v + c_value_text - regular_columns] = d::TableColumn("value_text", d::LogicalType::VARCHAR);
    m[v + c_ts_producer_tz - regular_columns] =
        d::TableColumn("timestamp_producer_tz", d::LogicalType::TIMESTAMP_TZ);
    m[v + c_ts_broker_tz - regular_columns] =
        d::TableColumn("timestamp_broker_tz", d::LogicalType::TIMESTAMP_TZ);
    m[d::COLUMN_IDENTIFIER_ROW_ID] = d::TableColumn("rowid", d::LogicalType::BIGINT);
    // Offered so that a statement reading no column (count(*)) asks for it, not rowid.
    m[d::COLUMN_IDENTIFIER_EMPTY] = d::TableColumn("", d::LogicalType::BOOLEAN);
    return m;
}

// DuckDB's column id as the enum's.
d::column_t column_of_id(d::column_t id) {
    if (id == d::COLUMN_IDENTIFIER_EMPTY) return c_empty;
    if (d::IsRowIdColumnId(id)) return c_row_id;
    if (d::IsVirtualColumn(id)) return id - d::VIRTUAL_COLUMN_START + regular_columns;
    return id;
}

// ---- Filter pushdown ----

// The table column `e` reads, when it is a plain reference to one of get's columns.
std::optional<d::column_t> column_of(const d::LogicalGet& get, const d::Expression& e) {
    if (e.GetExpressionClass() != d::ExpressionClass::BOUND_COLUMN_REF) return std::nullopt;
    const auto& ref = e.Cast<d::BoundColumnRefExpression>();
    if (ref.binding.table_index != get.table_index || ref.depth != 0) return std::nullopt;
    const auto& ids = get.GetColumnIds();
    if (ref.binding.column_index >= ids.size()) return std::nullopt;
    return ids[ref.binding.column_index].GetPrimaryIndex();
}

const d::Value* constant_of(const d::Expression& e) {
    if (e.GetExpressionClass() != d::ExpressionClass::BOUND_CONSTANT) return nullptr;
    return &e.Cast<d::BoundConstantExpression>().value;
}

range* range_of(bind_data& b, d::column_t c) {
    switch (c) {
        case c_partition:
            return &b.partitions;
        case c_offset:
            return &b.offsets;
        case c_ts_producer:
            return &b.ts_producer;
        case c_ts_broker:
            return &b.ts_broker;
        default:
            return nullptr;
    }
}

// Narrows r by "column <op> v". A value that is not a number narrows nothing (DuckDB's
// own filter decides); NULL empties the range, as it matches no row.
void narrow(range& r, d::ExpressionType op, const d::Value& v) {
    if (v.IsNull()) {
        r = {1, 0};
        return;
    }
    const auto& t = v.type();
    if (!t.IsNumeric()) return;
    const bool integral = t.IsIntegral() && t.id() != d::LogicalTypeId::UHUGEINT &&
                          t.id() != d::LogicalTypeId::HUGEINT &&
                          t.id() != d::LogicalTypeId::UBIGINT;
    int64_t floor_i = 0;
    int64_t ceil_i = 0;
    if (integral) {
        floor_i = ceil_i = v.GetValue<int64_t>();
    } else {
        const double x = v.GetValue<double>();
        if (std::isnan(x) || std::fabs(x) > 9e18) return;
        floor_i = static_cast<int64_t>(std::floor(x));
        ceil_i = static_cast<int64_t>(std::ceil(x));
    }
    constexpr auto max = std::numeric_limits<int64_t>::max();
    constexpr auto min = std::numeric_limits<int64_t>::min();
    switch (op) {
        case d::ExpressionType::COMPARE_EQUAL:
            if (floor_i != ceil_i) {
                r = {1, 0};
                return;
            }
            r.lo = std::max(r.lo, floor_i);
            r.hi = std::min(r.hi, floor_i);
            break;
        case d::ExpressionType::COMPARE_GREATERTHAN:
            r.lo = std::max(r.lo, floor_i == max ? floor_i : floor_i + 1);
            break;
        case d::ExpressionType::COMPARE_GREATERTHANOREQUALTO:
            r.lo = std::max(r.lo, ceil_i);
            break;
        case d::ExpressionType::COMPARE_LESSTHAN:
            r.hi = std::min(r.hi, ceil_i == min ? ceil_i : ceil_i - 1);
            break;
        case d::ExpressionType::COMPARE_LESSTHANOREQUALTO:
            r.hi = std::min(r.hi, floor_i);
            break;
        default:
            break;
    }
}

// Whether narrowing column c's range by `c <op> v` is exactly the filter: partition and
// offset are read exactly as their ranges say (the timestamps are not: a time index
// seeks near a bound), and an integer or NULL narrows exactly.
bool exact(d::column_t c, d::ExpressionType op, const d::Value& v) {
    if (c != c_partition && c != c_offset) return false;
    switch (op) {
        case d::ExpressionType::COMPARE_EQUAL:
        case d::ExpressionType::COMPARE_GREATERTHAN:
        case d::ExpressionType::COMPARE_GREATERTHANOREQUALTO:
        case d::ExpressionType::COMPARE_LESSTHAN:
        case d::ExpressionType::COMPARE_LESSTHANOREQUALTO:
            break;
        default:
            return false;
    }
    const auto t = v.type().id();
    return v.IsNull() || t == d::LogicalTypeId::TINYINT || t == d::LogicalTypeId::SMALLINT ||
           t == d::LogicalTypeId::INTEGER || t == d::LogicalTypeId::BIGINT ||
           t == d::LogicalTypeId::UTINYINT || t == d::LogicalTypeId::USMALLINT ||
           t == d::LogicalTypeId::UINTEGER;
}

// Narrows the scan's ranges by the comparisons of a WHERE clause on partition, offset and
// the timestamps: column <op> constant (either side), BETWEEN, IN. A comparison of
// partition or offset with an integer constant (or BETWEEN two) is then exactly what the
// scan reads, and leaves `filters` (so that count(*) ... WHERE partition = 1 reads no
// column); every other filter stays for DuckDB to check on each row: the scan may read
// more than a predicate needs, but never returns a row it should not.
void pushdown_filters(d::ClientContext&, d::LogicalGet& get, d::FunctionData* data,
                      d::vector<d::unique_ptr<d::Expression>>& filters) {
    auto& b = data->Cast<bind_data>();
    for (size_t i = 0; i < filters.size();) {
        const auto& f = filters[i];
        bool done = false;  // the ranges are exactly f
        switch (f->GetExpressionClass()) {
            case d::ExpressionClass::BOUND_COMPARISON: {
                const auto& cmp = f->Cast<d::BoundComparisonExpression>();
                auto op = f->GetExpressionType();
                auto c = column_of(get, *cmp.left);
                const auto* v = constant_of(*cmp.right);
                if (!c || !v) {
                    c = column_of(get, *cmp.right);
                    v = constant_of(*cmp.left);
                    op = d::FlipComparisonExpression(op);
                }
                range* r = c && v ? range_of(b, *c) : nullptr;
                if (r) narrow(*r, op, *v);
                done = r && exact(*c, op, *v);
                break;
            }
            case d::ExpressionClass::BOUND_BETWEEN: {
                const auto& bt = f->Cast<d::BoundBetweenExpression>();
                const auto c = column_of(get, *bt.input);
                range* r = c ? range_of(b, *c) : nullptr;
                if (!r) break;
                if (const auto* lo = constant_of(*bt.lower))
                    narrow(*r,
                           bt.lower_inclusive ? d::ExpressionType::COMPARE_GREATERTHANOREQUALTO
                                              : d::ExpressionType::COMPARE_GREATERTHAN,
                           *lo);
                const auto lo_op = bt.lower_inclusive
                                       ? d::ExpressionType::COMPARE_GREATERTHANOREQUALTO
                                       : d::ExpressionType::COMPARE_GREATERTHAN;
                const auto hi_op = bt.upper_inclusive ? d::ExpressionType::COMPARE_LESSTHANOREQUALTO
                                                      : d::ExpressionType::COMPARE_LESSTHAN;
                const auto* lo = constant_of(*bt.lower);
                const auto* hi = constant_of(*bt.upper);
                if (lo) narrow(*r, lo_op, *lo);
                if (hi) narrow(*r, hi_op, *hi);
                done = lo && hi && exact(*c, lo_op, *lo) && exact(*c, hi_op, *hi);
                break;
            }
            case d::ExpressionClass::BOUND_OPERATOR: {
                if (f->GetExpressionType() != d::ExpressionType::COMPARE_IN) break;
                const auto& in = f->Cast<d::BoundOperatorExpression>();
                const auto c = column_of(get, *in.children[0]);
                range* r = c ? range_of(b, *c) : nullptr;
                if (!r) break;
                // The smallest range holding every listed value.
                range hull{1, 0};
                for (size_t k = 1; k < in.children.size(); ++k) {
                    const auto* v = constant_of(*in.children[k]);
                    if (!v) {
                        hull = {};
                        break;
                    }
                    range one;
                    narrow(one, d::ExpressionType::COMPARE_EQUAL, *v);
                    if (one.empty()) continue;
                    hull = hull.empty()
                               ? one
                               : range{std::min(hull.lo, one.lo), std::max(hull.hi, one.hi)};
                }
                r->lo = std::max(r->lo, hull.lo);
                r->hi = std::min(r->hi, hull.hi);
                break;
            }
            default:
                break;
        }
        if (done)
            filters.erase(filters.begin() + static_cast<std::ptrdiff_t>(i));
        else
            ++i;
    }
}

d::unique_ptr<d::NodeStatistics> cardinality(d::ClientContext&, const d::FunctionData* data) {
    const auto& b = data->Cast<bind_data>();
    d::idx_t rows = 0;
    for (int32_t p = 0;; ++p) {
        const auto* pl = partition_of(b, p);
        if (!pl) break;
        rows += static_cast<d::idx_t>(
            std::max<offset_t>(0, pl->last_stable_offset() - pl->log_start_offset()));
    }
    return d::make_uniq<d::NodeStatistics>(rows, rows);
}

// ---- Scan ----

d::unique_ptr<d::GlobalTableFunctionState> init_global(d::ClientContext&,
                                                       d::TableFunctionInitInput& input) {
    const auto& b = input.bind_data->Cast<bind_data>();
    auto g = d::make_uniq<global_state>();
    for (const auto id : input.column_ids) g->columns.push_back(column_of_id(id));
    // Every record counts when no column is read and no producer time bounds the rows
    // (a producer time is checked per record; the other ranges bound the reads exactly).
    g->count_only =
        std::all_of(g->columns.begin(), g->columns.end(), [](auto c) { return c == c_empty; }) &&
        b.ts_producer == range{};
    {
        // Checked again when the statement runs: a prepared statement may outlive the
        // policy that allowed it.
        const auto& s = b.session;
        std::lock_guard lk(*s.mu);
        if (auto why = s.ctx->check_topic_read(b.topic)) throw d::PermissionException(*why);
        // The statement's cut: every reference to the topic in one statement sees the
        // same one (statement_context::snapshot), and only what a READ_COMMITTED
        // consumer may see (up to the last stable offset).
        for (int32_t p = 0;; ++p) {
            const auto* pl = partition_of(b, p);
            if (!pl) break;
            g->cut.push_back(s.ctx->snapshot({b.topic, p}, pl->last_stable_offset()));
        }
    }
    if (b.partitions.empty() || b.offsets.empty() || b.ts_producer.empty() || b.ts_broker.empty())
        return g;  // nothing to read
    g->next_partition = static_cast<int32_t>(std::max<int64_t>(b.partitions.lo, 0));
    g->last_partition = static_cast<int32_t>(
        std::min<int64_t>(b.partitions.hi, static_cast<int64_t>(g->cut.size()) - 1));
    return g;
}

d::unique_ptr<d::LocalTableFunctionState> init_local(d::ExecutionContext&,
                                                     d::TableFunctionInitInput&,
                                                     d::GlobalTableFunctionState*) {
    return d::make_uniq<local_state>();
}

// Positions l on partition p: where its records start and end under the ranges. false
// (with no error) when the partition has nothing to return.
result<bool> enter_partition(const bind_data& b, const global_state& g, local_state& l, int32_t p) {
    const offset_t cut = g.cut[static_cast<size_t>(p)];
    if (b.src.shared()) {
        l.store = b.src.partitions->partition(b.topic, p);
        if (!l.store) return false;
        l.partition = p;
        auto span = store_span(*l.store, cut, b.offsets, b.ts_producer);
        if (!span) return span.err();
        if (!*span) return false;
        if (auto r = l.store_records.open(l.store, (*span)->first, (*span)->second); !r)
            return r.err();
        ++b.session.counters->partitions_scanned;
        return true;
    }
    l.log = b.src.logs->partition(*b.state, p);
    if (!l.log) return false;
    l.partition = p;
    auto span = partition_span(*l.log, cut, b.offsets, b.ts_producer, b.ts_broker);
    if (!span) return span.err();
    if (!*span) return false;
    if (auto r = l.records.open_committed(l.log, (*span)->first, (*span)->second); !r)
        return r.err();
    ++b.session.counters->partitions_scanned;
    return true;
}

// The partition a scan's thread reads next into l, entered; false when none is left.
bool next_partition(const bind_data& b, global_state& g, local_state& l) {
    for (;;) {
        int32_t p = 0;
        {
            std::lock_guard lk(g.mu);
            if (g.next_partition > g.last_partition) return false;
            p = g.next_partition++;
        }
        auto entered = enter_partition(b, g, l, p);
        if (!entered) scan_error(b, p, entered.err());
        if (*entered) return true;
        l.log = nullptr;
        l.store = nullptr;
    }
}

// The next record of the scan into l.rec(); false at the end.
bool advance(const bind_data& b, global_state& g, local_state& l) {
    for (;;) {
        if (l.reading()) {
            auto more = l.store ? l.store_records.next() : l.records.next();
            if (!more) scan_error(b, l.partition, more.err());
            if (*more) return true;
            l.log = nullptr;
            l.records.close();
            l.store = nullptr;
            l.store_records.close();
        }
        if (!next_partition(b, g, l)) return false;
    }
}

// advance() for a count: how many records the scan has next (a batch's), 0 at the end.
// Batches wholly in the range are counted from their headers
// (log::record_cursor::next_count, log::store_cursor::next_count).
int64_t advance_count(const bind_data& b, global_state& g, local_state& l) {
    for (;;) {
        if (l.reading()) {
            auto n = l.store ? l.store_records.next_count() : l.records.next_count();
            if (!n) scan_error(b, l.partition, n.err());
            if (*n && **n > 0) return **n;
            if (!*n) {
                l.log = nullptr;
                l.records.close();
                l.store = nullptr;
                l.store_records.close();
            }
            continue;
        }
        if (!next_partition(b, g, l)) return 0;
    }
}

void set_bytes(d::Vector& v, d::idx_t row, const std::optional<bytes_view>& x) {
    if (!x) {
        d::FlatVector::SetNull(v, row, true);
        return;
    }
    d::FlatVector::GetData<d::string_t>(v)[row] =
        d::StringVector::AddStringOrBlob(v, reinterpret_cast<const char*>(x->data()), x->size());
}

// Text only when the bytes are valid UTF-8 (DuckDB requires it of every VARCHAR).
void set_text(d::Vector& v, d::idx_t row, const std::optional<bytes_view>& x) {
    if (x) {
        const std::string_view s(reinterpret_cast<const char*>(x->data()), x->size());
        if (is_valid_utf8(s)) {
            d::FlatVector::GetData<d::string_t>(v)[row] =
                d::StringVector::AddString(v, s.data(), s.size());
            return;
        }
    }
    d::FlatVector::SetNull(v, row, true);
}

// Milliseconds since the epoch as TIMESTAMPTZ (microseconds); NULL past its range.
void set_time(d::Vector& v, d::idx_t row, int64_t ms) {
    constexpr int64_t limit = std::numeric_limits<int64_t>::max() / 1000;
    if (ms > limit || ms < -limit) {
        d::FlatVector::SetNull(v, row, true);
        return;
    }
    d::FlatVector::GetData<int64_t>(v)[row] = ms * 1000;
}

void set_headers(const bind_data& b, const local_state& l, d::Vector& v, d::idx_t row) {
    const auto& rec = l.rec();
    if (rec.header_count == 0) {
        d::FlatVector::GetData<d::string_t>(v)[row] = d::string_t("[]");
        return;
    }
    std::string json;
    const bool ok = append_headers_json(json, rec);
    if (!ok)
        throw d::IOException(
            fmt::format("{}-{} offset {}: malformed headers", b.topic, l.partition, rec.offset));
    d::FlatVector::GetData<d::string_t>(v)[row] =
        d::StringVector::AddString(v, json.data(), json.size());
}

void count_reads(const bind_data& b, local_state& l) {
    auto& to = *b.session.counters;
    if (b.src.shared()) {
        auto& from = l.store_records.stats();
        to.batches_read += from.batches_read;
        to.bytes_read += from.bytes_read;
        to.records_read += from.records_read;
        from = {};
        return;
    }
    auto& from = l.records.stats();
    to.segments_read += from.segments_read;
    to.batches_read += from.batches_read;
    to.bytes_read += from.bytes_read;
    to.records_read += from.records_read;
    from = {};
}

// The scan of a statement that reads no column: rows without values, as many as the
// records in range, STANDARD_VECTOR_SIZE at a time.
void scan_count(const bind_data& b, global_state& g, local_state& l, d::DataChunk& out) {
    d::idx_t n = 0;
    while (n < STANDARD_VECTOR_SIZE) {
        if (l.counted == 0 && (l.counted = advance_count(b, g, l)) == 0) break;
        const auto take =
            std::min<int64_t>(l.counted, static_cast<int64_t>(STANDARD_VECTOR_SIZE - n));
        n += static_cast<d::idx_t>(take);
        l.counted -= take;
    }
    for (auto& v : out.data) {
        v.SetVectorType(d::VectorType::CONSTANT_VECTOR);
        d::ConstantVector::SetNull(v, true);
    }
    count_reads(b, l);
    out.SetCardinality(n);
}

void scan(d::ClientContext&, d::TableFunctionInput& input, d::DataChunk& out) {
    const auto& b = input.bind_data->Cast<bind_data>();
    auto& g = input.global_state->Cast<global_state>();
    auto& l = input.local_state->Cast<local_state>();
    if (g.count_only) {
        scan_count(b, g, l, out);
        return;
    }
    // A chunk ends early past this many bytes of keys and values: 2,048 records of 1 MiB
    // would be 2 GiB of strings at once, which the session's memory bound would refuse
    // (duck/session_memory.h); DuckDB takes chunks of any size up to 2,048 rows.
    constexpr size_t chunk_bytes_max = size_t{16} << 20;
    size_t chunk_bytes = 0;
    d::idx_t n = 0;
    while (n < STANDARD_VECTOR_SIZE && chunk_bytes < chunk_bytes_max && advance(b, g, l)) {
        const auto& rec = l.rec();
        // Producer times need not grow along a partition, so the range cannot end the scan
        // early; a record outside it is dropped before any column is built.
        if (rec.timestamp < b.ts_producer.lo || rec.timestamp > b.ts_producer.hi) continue;
        for (size_t i = 0; i < g.columns.size(); ++i) {
            auto& v = out.data[i];
            switch (g.columns[i]) {
                case c_partition:
                    d::FlatVector::GetData<int32_t>(v)[n] = l.partition;
                    break;
                case c_offset:
                    d::FlatVector::GetData<int64_t>(v)[n] = rec.offset;
                    break;
                case c_ts_producer:
                    d::FlatVector::GetData<int64_t>(v)[n] = rec.timestamp;
                    break;
                case c_ts_broker: {
                    if (l.store) {  // the batch index's (NULL: committed before it kept one)
                        if (auto t = l.store_records.append_time())
                            d::FlatVector::GetData<int64_t>(v)[n] = *t;
                        else
                            d::FlatVector::SetNull(v, n, true);
                        break;
                    }
                    auto t = l.records.append_time();
                    if (!t) scan_error(b, l.partition, t.err());
                    d::FlatVector::GetData<int64_t>(v)[n] = *t;
                    break;
                }
                case c_ts_producer_tz:
                    set_time(v, n, rec.timestamp);
                    break;
                case c_ts_broker_tz: {
                    if (l.store) {
                        if (auto t = l.store_records.append_time())
                            set_time(v, n, *t);
                        else
                            d::FlatVector::SetNull(v, n, true);
                        break;
                    }
                    auto t = l.records.append_time();
                    if (!t) scan_error(b, l.partition, t.err());
                    set_time(v, n, *t);
                    break;
                }
                case c_key:
                    set_bytes(v, n, rec.key);
                    break;
                case c_value:
                    set_bytes(v, n, rec.value);
                    break;
                case c_headers:
                    set_headers(b, l, v, n);
                    break;
                case c_key_text:
                    set_text(v, n, rec.key);
                    break;
                case c_value_text:
                    set_text(v, n, rec.value);
                    break;
                case c_empty:  // never read
                    d::FlatVector::SetNull(v, n, true);
                    break;
                default:  // the row id: unique within the topic
                    d::FlatVector::GetData<int64_t>(v)[n] =
                        (static_cast<int64_t>(l.partition) << 47) ^ rec.offset;
                    break;
            }
        }
        chunk_bytes += (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
        ++n;
    }
    count_reads(b, l);
    out.SetCardinality(n);
}

}  // namespace

void register_topic_scan(duckdb::DatabaseInstance& db, topic_source src, session_finder find) {
    // DuckDB's callbacks are plain function pointers: the topics' source and the session
    // finder reach bind through the function's info.
    struct info final : d::TableFunctionInfo {
        topic_source src;
        session_finder find;
    };
    auto i = d::make_shared_ptr<info>();
    i->src = src;
    i->find = std::move(find);
    d::TableFunction f(
        "kafka_topic", {d::LogicalType::VARCHAR}, scan,
        [](d::ClientContext& context, d::TableFunctionBindInput& input,
           d::vector<d::LogicalType>& types, d::vector<d::string>& names) {
            const auto& self = input.info->Cast<info>();
            return bind(context, input, types, names, self.src, self.find);
        },
        init_global, init_local);
    f.function_info = std::move(i);
    f.projection_pushdown = true;
    f.filter_pushdown = false;  // pushdown_filters narrows the scan (and takes exact ones)
    f.pushdown_complex_filter = pushdown_filters;
    f.cardinality = cardinality;
    f.get_virtual_columns = virtual_columns;
    d::ExtensionLoader loader(db, "sluice");
    loader.RegisterFunction(std::move(f));
}

void topic_columns(duckdb::vector<duckdb::LogicalType>& types,
                   duckdb::vector<duckdb::string>& names) {
    types = {d::LogicalType::INTEGER, d::LogicalType::BIGINT, d::LogicalType::BIGINT,
             d::LogicalType::BIGINT,  d::LogicalType::BLOB,   d::LogicalType::BLOB,
             d::LogicalType::VARCHAR};
    names = {"partition", "offset", "timestamp_producer", "timestamp_broker", "key",
             "value",     "headers"};
}

}  // namespace sluice::sql::duck
