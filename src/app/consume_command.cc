#include "app/consume_command.h"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>

#include "app/rdkafka_client.h"
#include "app/usage_errors.h"
#include "sql/json_text.h"

namespace sluice::app {
namespace {

// How long one poll waits: the bound on noticing SIGINT or SIGTERM.
constexpr int poll_timeout_ms = 200;
// How long finding the offsets for a time may take.
constexpr int offsets_for_times_timeout_ms = 10000;

struct consume_options {
    broker_flags broker;
    std::string format = "table";
    std::string topic;
    bool from_beginning = false, follow = false;
    std::optional<int64_t> offset;  // negative: that many records before the end
    std::string from_time;
    std::optional<int32_t> partition;
    std::optional<int64_t> count;
    std::string key_separator;  // text output: print the key, this, then the value
};

std::atomic<bool> stop_requested{false};

void on_stop_signal(int) { stop_requested = true; }

// Where each partition starts, in a list librdkafka can assign.
result<rd_kafka_topic_partition_list_t*> start_positions(rd_kafka_t* rk,
                                                         const consume_options& o,
                                                         int32_t partitions) {
    auto* list = rd_kafka_topic_partition_list_new(partitions);
    int64_t start = RD_KAFKA_OFFSET_END;
    if (o.from_beginning) start = RD_KAFKA_OFFSET_BEGINNING;
    if (o.offset) start = *o.offset >= 0 ? *o.offset : RD_KAFKA_OFFSET_TAIL(-*o.offset);
    const auto time = parse_time(o.from_time);
    if (time) start = *time;  // the timestamp, turned into an offset below
    for (int32_t p = 0; p < partitions; ++p)
        if (!o.partition || *o.partition == p)
            rd_kafka_topic_partition_list_add(list, o.topic.c_str(), p)->offset = start;
    if (!time) return list;
    auto e = rd_kafka_offsets_for_times(rk, list, offsets_for_times_timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_topic_partition_list_destroy(list);
        return {errc::io_error, fmt::format("offsets for {}: {}", o.from_time,
                                            rd_kafka_err2str(e))};
    }
    for (int i = 0; i < list->cnt; ++i)  // -1: no record at or after the time yet
        if (list->elems[i].offset < 0) list->elems[i].offset = RD_KAFKA_OFFSET_END;
    return list;
}

void append_bytes_or_null(std::string& out, const void* data, size_t size) {
    if (!data) {
        out += "null";
        return;
    }
    sql::append_json_bytes(out, bytes_view(static_cast<const uint8_t*>(data), size));
}

// {"topic","partition","offset","timestamp","key","value","headers":[{"key","value"}]}
std::string json_line(const rd_kafka_message_t* m) {
    std::string s = "{\"topic\":";
    sql::append_json_string(s, rd_kafka_topic_name(m->rkt));
    rd_kafka_timestamp_type_t type;
    const int64_t ts = rd_kafka_message_timestamp(m, &type);
    s += fmt::format(",\"partition\":{},\"offset\":{},\"timestamp\":{},\"key\":", m->partition,
                     m->offset, ts);
    append_bytes_or_null(s, m->key, m->key_len);
    s += ",\"value\":";
    append_bytes_or_null(s, m->payload, m->len);
    s += ",\"headers\":[";
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* value = nullptr;
        size_t size = 0;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
            s += i > 0 ? ",{\"key\":" : "{\"key\":";
            sql::append_json_string(s, name);
            s += ",\"value\":";
            append_bytes_or_null(s, value, size);
            s += '}';
        }
    }
    s += "]}\n";
    return s;
}

void print(const consume_options& o, const rd_kafka_message_t* m) {
    if (format_of(o.format) == output_format::json) {
        const auto line = json_line(m);
        std::fwrite(line.data(), 1, line.size(), stdout);
    } else {
        if (!o.key_separator.empty()) {
            if (m->key) std::fwrite(m->key, 1, m->key_len, stdout);
            std::fwrite(o.key_separator.data(), 1, o.key_separator.size(), stdout);
        }
        if (m->payload) std::fwrite(m->payload, 1, m->len, stdout);
        std::fputc('\n', stdout);
    }
    if (o.follow) std::fflush(stdout);  // a reader of a pipe sees each record as it comes
}

int usage(const std::string& what) {
    std::cerr << "sluice consume: " << what << "\n";
    return usage_exit_code;
}

// Polls until the end of every partition (or forever with --follow), --count records,
// or a signal.
int run(rd_kafka_queue_t* queue, const consume_options& o, int partitions) {
    int64_t printed = 0;
    int at_end = 0;
    while (!stop_requested && (!o.count || printed < *o.count)) {
        rd_kafka_message_t* m = rd_kafka_consume_queue(queue, poll_timeout_ms);
        if (!m) continue;
        const auto err = m->err;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            print(o, m);
            ++printed;
        } else if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            ++at_end;
        } else {
            std::string why = rd_kafka_message_errstr(m);
            rd_kafka_message_destroy(m);
            std::fflush(stdout);
            return fail(fmt::format("consuming '{}': {}", o.topic, why));
        }
        rd_kafka_message_destroy(m);
        if (!o.follow && at_end >= partitions) break;
    }
    std::fflush(stdout);
    return 0;
}

// Reads the partitions of `list` from their offsets into one queue. librdkafka's simple
// consumer: no group id, so no FindCoordinator and no group rights are needed.
int consume_from(rd_kafka_t* rk, const consume_options& o,
                 const rd_kafka_topic_partition_list_t* list) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    int started = 0, rc = 0;
    for (; started < list->cnt; ++started) {
        const auto& p = list->elems[started];
        if (rd_kafka_consume_start_queue(rkt, p.partition, p.offset, queue) != 0) {
            rc = fail(fmt::format("cannot consume partition {}: {}", p.partition,
                                  rd_kafka_err2str(rd_kafka_last_error())));
            break;
        }
    }
    if (rc == 0) {
        std::signal(SIGINT, on_stop_signal);
        std::signal(SIGTERM, on_stop_signal);
        rc = run(queue, o, list->cnt);
    }
    for (int i = 0; i < started; ++i) rd_kafka_consume_stop(rkt, list->elems[i].partition);
    rd_kafka_queue_destroy(queue);
    rd_kafka_topic_destroy(rkt);
    return rc;
}

int consume(const consume_options& o) {
    const int starts = int{o.from_beginning} + int{o.offset.has_value()} +
                       int{!o.from_time.empty()};
    if (starts > 1) return usage("give at most one of --from-beginning, --offset, --from-time");
    if (!o.from_time.empty() && !parse_time(o.from_time))
        return usage("--from-time '" + o.from_time +
                     "': milliseconds since the epoch or YYYY-MM-DDTHH:MM:SS[.mmm][Z] (UTC)");
    if (o.count && *o.count <= 0) return usage("--count wants a positive number");
    auto rk = make_rd_kafka(RD_KAFKA_CONSUMER, o.broker, {{"enable.partition.eof", "true"}});
    if (!rk) return fail(rk.err().message);
    auto n = partition_count(rk->get(), o.topic);
    if (!n) return fail(n.err().message);
    if (o.partition && (*o.partition < 0 || *o.partition >= *n))
        return fail(fmt::format("topic '{}' has no partition {} (it has {})", o.topic,
                                *o.partition, *n));
    auto list = start_positions(rk->get(), o, *n);
    if (!list) return fail(list.err().message);
    const int rc = consume_from(rk->get(), o, *list);
    rd_kafka_topic_partition_list_destroy(*list);
    return rc;
}

}  // namespace

void add_consume_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<consume_options>();
    auto* cmd = app.add_subcommand(
        "consume", "Print a topic's records: values, one per line, or JSON objects");
    cmd->add_option("topic", opts->topic, "Topic name")->required();
    cmd->add_flag("--from-beginning", opts->from_beginning, "Start at each partition's first record");
    cmd->add_option("--offset,-o", opts->offset,
                    "Start at this offset (negative: that many records before the end)");
    cmd->add_option("--from-time", opts->from_time,
                    "Start at the first record at or after this time (ms since the epoch or "
                    "YYYY-MM-DDTHH:MM:SS[.mmm][Z], UTC)");
    cmd->add_option("--partition,-p", opts->partition, "Only this partition");
    cmd->add_option("--count,-c", opts->count, "Exit after this many records");
    cmd->add_flag("--follow,-f", opts->follow,
                  "Wait for new records at the end, until SIGINT or SIGTERM");
    cmd->add_option("--key-separator,-K", opts->key_separator,
                    "Text output: print the key, this text, then the value");
    add_format_flag(cmd, opts->format);
    add_broker_flags(cmd, opts->broker);
    cmd->callback([opts, &exit_code] { exit_code = consume(*opts); });
}

}  // namespace sluice::app
