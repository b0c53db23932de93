#include "duck_topic_scan.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "log/log_manager.h"
#include "log/partition_log.h"
#include "log/record_cursor.h"
#include "protocol/record_reader.h"
#include "sql/json_text.h"

namespace sluice::bench {

namespace {

enum column : idx_t {
    c_partition,
    c_offset,
    c_timestamp_producer,
    c_timestamp_broker,
    c_key,
    c_value,
    c_headers,
    c_count,
};

constexpr const char* column_names[c_count] = {
    "partition", "offset", "timestamp_producer", "timestamp_broker", "key", "value", "headers"};

// One partition's range, fixed at the scan's start.
struct part_range {
    log::partition_log* log = nullptr;
    int32_t partition = 0;
    offset_t start = 0;
    offset_t end = 0;
};

struct bind_data {
    std::shared_ptr<log::topic_state> topic;  // keeps the partitions alive
    std::vector<log::partition_log*> parts;
    std::optional<int32_t> partition;
    offset_t from_offset = 0;
    offset_t to_offset = std::numeric_limits<offset_t>::max();
    int64_t from_ts = std::numeric_limits<int64_t>::min();
    int64_t to_ts = std::numeric_limits<int64_t>::max();  // exclusive
};

struct global_state {
    std::vector<part_range> ranges;
    std::vector<idx_t> columns;  // projected column ids, in output order
    std::atomic<size_t> next{0};
};

struct local_state {
    log::record_cursor cursor;
    const part_range* range = nullptr;
};

std::optional<int64_t> named_int(duckdb_bind_info info, const char* name) {
    duckdb_value v = duckdb_bind_get_named_parameter(info, name);
    if (!v) return std::nullopt;
    std::optional<int64_t> out;
    if (!duckdb_is_null_value(v)) out = duckdb_get_int64(v);
    duckdb_destroy_value(&v);
    return out;
}

void bind(duckdb_bind_info info) {
    auto* logs = static_cast<log::log_manager*>(duckdb_bind_get_extra_info(info));
    duckdb_value name_value = duckdb_bind_get_parameter(info, 0);
    char* name_chars = duckdb_get_varchar(name_value);
    std::string name = name_chars;
    duckdb_free(name_chars);
    duckdb_destroy_value(&name_value);

    auto data = std::make_unique<bind_data>();
    data->topic = logs->topic(name);
    if (!data->topic) {
        duckdb_bind_set_error(info, ("no topic " + name).c_str());
        return;
    }
    for (int32_t p = 0;; ++p) {
        log::partition_log* pl = logs->partition(*data->topic, p);
        if (!pl) break;
        data->parts.push_back(pl);
    }
    if (auto v = named_int(info, "partition")) data->partition = static_cast<int32_t>(*v);
    if (auto v = named_int(info, "from_offset")) data->from_offset = *v;
    if (auto v = named_int(info, "to_offset")) data->to_offset = *v;
    if (auto v = named_int(info, "from_timestamp")) data->from_ts = *v;
    if (auto v = named_int(info, "to_timestamp")) data->to_ts = *v;

    duckdb_logical_type int32_t_ = duckdb_create_logical_type(DUCKDB_TYPE_INTEGER);
    duckdb_logical_type int64_t_ = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
    duckdb_logical_type text_t = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    const duckdb_logical_type types[c_count] = {int32_t_, int64_t_, int64_t_, int64_t_,
                                                text_t,   text_t,   text_t};
    for (idx_t c = 0; c < c_count; ++c)
        duckdb_bind_add_result_column(info, column_names[c], types[c]);
    duckdb_destroy_logical_type(&int32_t_);
    duckdb_destroy_logical_type(&int64_t_);
    duckdb_destroy_logical_type(&text_t);

    idx_t rows = 0;
    for (auto* pl : data->parts)
        rows += static_cast<idx_t>(pl->high_watermark() - pl->log_start_offset());
    duckdb_bind_set_cardinality(info, rows, false);
    duckdb_bind_set_bind_data(info, data.release(),
                              [](void* p) { delete static_cast<bind_data*>(p); });
}

void init(duckdb_init_info info) {
    auto* data = static_cast<bind_data*>(duckdb_init_get_bind_data(info));
    auto st = std::make_unique<global_state>();
    for (idx_t i = 0, n = duckdb_init_get_column_count(info); i < n; ++i) {
        idx_t c = duckdb_init_get_column_index(info, i);
        st->columns.push_back(c);
    }
    for (auto* pl : data->parts) {
        if (data->partition && pl->partition() != *data->partition) continue;
        part_range r{pl, pl->partition(), std::max(pl->log_start_offset(), data->from_offset),
                     std::min(pl->high_watermark(), data->to_offset)};
        if (data->from_ts != std::numeric_limits<int64_t>::min()) {
            // The first record with a timestamp at or past from_ts: none before it is in range.
            auto at = pl->offset_for_timestamp(data->from_ts);
            if (!at) {
                duckdb_init_set_error(info, at.err().message.c_str());
                return;
            }
            r.start = *at ? std::max(r.start, (*at)->offset) : r.end;
        }
        if (r.start < r.end) st->ranges.push_back(r);
    }
    duckdb_init_set_max_threads(info, std::max<idx_t>(1, st->ranges.size()));
    duckdb_init_set_init_data(info, st.release(),
                              [](void* p) { delete static_cast<global_state*>(p); });
}

void local_init(duckdb_init_info info) {
    duckdb_init_set_init_data(info, new local_state(),
                              [](void* p) { delete static_cast<local_state*>(p); });
}

void set_text(duckdb_vector v, idx_t row, const std::optional<bytes_view>& b) {
    if (!b) {
        duckdb_vector_ensure_validity_writable(v);
        duckdb_validity_set_row_invalid(duckdb_vector_get_validity(v), row);
        return;
    }
    duckdb_vector_assign_string_element_len(v, row, reinterpret_cast<const char*>(b->data()),
                                            b->size());
}

// Fills one chunk; records outside the named bounds are skipped before any column is built.
void scan(duckdb_function_info info, duckdb_data_chunk out) {
    auto* data = static_cast<bind_data*>(duckdb_function_get_bind_data(info));
    auto* st = static_cast<global_state*>(duckdb_function_get_init_data(info));
    auto* ls = static_cast<local_state*>(duckdb_function_get_local_init_data(info));
    const idx_t cap = duckdb_vector_size();
    const size_t ncols = st->columns.size();
    std::vector<duckdb_vector> vecs(ncols);
    std::vector<void*> raw(ncols);
    for (size_t i = 0; i < ncols; ++i) {
        vecs[i] = duckdb_data_chunk_get_vector(out, i);
        raw[i] = duckdb_vector_get_data(vecs[i]);
    }
    const bool ts_filter = data->from_ts != std::numeric_limits<int64_t>::min() ||
                           data->to_ts != std::numeric_limits<int64_t>::max();
    std::string headers;
    idx_t row = 0;
    while (row < cap) {
        if (!ls->range) {
            size_t i = st->next.fetch_add(1);
            if (i >= st->ranges.size()) break;
            ls->range = &st->ranges[i];
            ls->cursor.open(ls->range->log, ls->range->start, ls->range->end);
        }
        auto more = ls->cursor.next();
        if (!more) {
            duckdb_function_set_error(info, more.err().message.c_str());
            return;
        }
        if (!*more) {
            ls->cursor.close();
            ls->range = nullptr;
            continue;
        }
        const protocol::record_ref& r = ls->cursor.record();
        if (ts_filter && (r.timestamp < data->from_ts || r.timestamp >= data->to_ts)) continue;
        for (size_t i = 0; i < ncols; ++i) {
            switch (st->columns[i]) {
                case c_partition:
                    static_cast<int32_t*>(raw[i])[row] = ls->range->partition;
                    break;
                case c_offset:
                    static_cast<int64_t*>(raw[i])[row] = r.offset;
                    break;
                case c_timestamp_producer:
                    static_cast<int64_t*>(raw[i])[row] = r.timestamp;
                    break;
                case c_timestamp_broker: {
                    auto t = ls->cursor.append_time();
                    if (!t) {
                        duckdb_function_set_error(info, t.err().message.c_str());
                        return;
                    }
                    static_cast<int64_t*>(raw[i])[row] = *t;
                    break;
                }
                case c_key:
                    set_text(vecs[i], row, r.key);
                    break;
                case c_value:
                    set_text(vecs[i], row, r.value);
                    break;
                case c_headers: {
                    headers.assign("[");
                    bool first = true;
                    protocol::record_reader::for_each_header(
                        r, [&](bytes_view k, const std::optional<bytes_view>& v) {
                            if (!first) headers.push_back(',');
                            first = false;
                            headers.append("{\"key\":");
                            sql::append_json_bytes(headers, k);
                            headers.append(",\"value\":");
                            if (v) {
                                sql::append_json_bytes(headers, *v);
                            } else {
                                headers.append("null");
                            }
                            headers.push_back('}');
                        });
                    headers.push_back(']');
                    duckdb_vector_assign_string_element_len(vecs[i], row, headers.data(),
                                                            headers.size());
                    break;
                }
                default:
                    break;  // a virtual column DuckDB may ask for (row id): left unset
            }
        }
        ++row;
    }
    duckdb_data_chunk_set_size(out, row);
}

}  // namespace

bool register_kafka_topic(duckdb_connection con, log::log_manager* logs) {
    duckdb_table_function f = duckdb_create_table_function();
    duckdb_table_function_set_name(f, "kafka_topic");
    duckdb_logical_type text_t = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type int64_t_ = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
    duckdb_table_function_add_parameter(f, text_t);
    for (const char* n :
         {"partition", "from_offset", "to_offset", "from_timestamp", "to_timestamp"}) {
        duckdb_table_function_add_named_parameter(f, n, int64_t_);
    }
    duckdb_destroy_logical_type(&text_t);
    duckdb_destroy_logical_type(&int64_t_);
    duckdb_table_function_set_extra_info(f, logs, nullptr);
    duckdb_table_function_set_bind(f, bind);
    duckdb_table_function_set_init(f, init);
    duckdb_table_function_set_local_init(f, local_init);
    duckdb_table_function_set_function(f, scan);
    duckdb_table_function_supports_projection_pushdown(f, true);
    const bool ok = duckdb_register_table_function(con, f) == DuckDBSuccess;
    duckdb_destroy_table_function(&f);
    return ok;
}

}  // namespace sluice::bench
