#include "sql/topic_scan_range.h"

#include <algorithm>

#include "sql/json_text.h"

namespace sluice::sql {

result<std::optional<std::pair<offset_t, offset_t>>> store_span(const log::partition_store& log,
                                                                offset_t cut, const range& offsets,
                                                                const range& ts_producer) {
    using span = std::optional<std::pair<offset_t, offset_t>>;
    offset_t start = std::max(log.log_start_offset(), offsets.lo);
    offset_t end =
        offsets.hi == std::numeric_limits<int64_t>::max() ? cut : std::min(cut, offsets.hi + 1);
    if (ts_producer.lo != std::numeric_limits<int64_t>::min() && start < end) {
        // The first record stamped at or after the bound: every earlier one is older.
        auto f = log.offset_for_timestamp(ts_producer.lo);
        if (!f) return f.err();
        if (!*f) return span{};
        start = std::max(start, (*f)->offset);
    }
    if (start >= end) return span{};
    return span{std::pair{start, end}};
}

result<std::optional<std::pair<offset_t, offset_t>>> partition_span(const log::partition_log& log,
                                                                    offset_t cut,
                                                                    const range& offsets,
                                                                    const range& ts_producer,
                                                                    const range& ts_broker) {
    using span = std::optional<std::pair<offset_t, offset_t>>;
    auto s = store_span(log, cut, offsets, ts_producer);
    if (!s || !*s) return s;
    auto [start, end] = **s;
    if (ts_broker.lo != std::numeric_limits<int64_t>::min() && start < end) {
        auto f = log.offset_for_append_time(ts_broker.lo);
        if (!f) return f.err();
        start = std::max(start, *f);
    }
    if (ts_broker.hi != std::numeric_limits<int64_t>::max() && start < end) {
        // Append times never decrease along a partition: the first record appended after
        // the bound ends the range.
        auto f = log.offset_for_append_time(ts_broker.hi + 1);
        if (!f) return f.err();
        end = std::min(end, *f);
    }
    if (start >= end) return span{};
    return span{std::pair{start, end}};
}

bool append_headers_json(std::string& out, const protocol::record_ref& rec) {
    out += '[';
    bool first = true;
    const bool ok = protocol::record_reader::for_each_header(
        rec, [&](bytes_view k, const std::optional<bytes_view>& v) {
            if (!first) out += ',';
            first = false;
            out += "{\"key\":";
            append_json_bytes(out, k);
            out += ",\"value\":";
            if (v)
                append_json_bytes(out, *v);
            else
                out += "null";
            out += '}';
        });
    out += ']';
    return ok;
}

}  // namespace sluice::sql
