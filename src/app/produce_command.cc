#include "app/produce_command.h"

#include <fmt/format.h>

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "app/rdkafka_client.h"
#include "app/usage_errors.h"

namespace sluice::app {
namespace {

// How long librdkafka may try to deliver a record before it reports it failed.
constexpr const char* delivery_timeout_ms = "30000";

struct produce_options {
    broker_flags broker;
    std::string topic;
    std::string key_separator;  // empty: the whole line is the value, no key
    std::vector<std::string> headers;
    int32_t partition = RD_KAFKA_PARTITION_UA;
};

struct delivery_counts {
    int64_t delivered = 0, failed = 0;
    std::string first_error;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* counts = static_cast<delivery_counts*>(opaque);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++counts->delivered;
        return;
    }
    if (counts->failed++ == 0) counts->first_error = rd_kafka_err2str(m->err);
}

rd_kafka_vu_t vu(rd_kafka_vtype_t type) {
    rd_kafka_vu_t v{};
    v.vtype = type;
    return v;
}

// Sends one line; a full local queue waits for deliveries and retries. (produceva, not
// producev: the latter's macros are GNU statement expressions.)
rd_kafka_resp_err_t send_line(rd_kafka_t* rk, const produce_options& o,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string& line) {
    std::vector<rd_kafka_vu_t> fields;
    fields.reserve(5 + headers.size());
    fields.push_back(vu(RD_KAFKA_VTYPE_TOPIC));
    fields.back().u.cstr = o.topic.c_str();
    fields.push_back(vu(RD_KAFKA_VTYPE_PARTITION));
    fields.back().u.i32 = o.partition;
    fields.push_back(vu(RD_KAFKA_VTYPE_MSGFLAGS));
    fields.back().u.i = RD_KAFKA_MSG_F_COPY;
    size_t value_at = 0;
    if (!o.key_separator.empty()) {
        auto at = line.find(o.key_separator);
        if (at != std::string::npos) {
            fields.push_back(vu(RD_KAFKA_VTYPE_KEY));
            fields.back().u.mem = {line.data(), at};
            value_at = at + o.key_separator.size();
        }
    }
    fields.push_back(vu(RD_KAFKA_VTYPE_VALUE));
    fields.back().u.mem = {line.data() + value_at, line.size() - value_at};
    for (const auto& [name, value] : headers) {
        fields.push_back(vu(RD_KAFKA_VTYPE_HEADER));
        fields.back().u.header = {name.c_str(), value.data(), static_cast<ssize_t>(value.size())};
    }
    for (;;) {
        rd_kafka_error_t* error = rd_kafka_produceva(rk, fields.data(), fields.size());
        if (!error) return RD_KAFKA_RESP_ERR_NO_ERROR;
        const auto e = rd_kafka_error_code(error);
        rd_kafka_error_destroy(error);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) return e;
        rd_kafka_poll(rk, 100);
    }
}

int produce(const produce_options& o) {
    std::vector<std::pair<std::string, std::string>> headers;
    for (const auto& kv : o.headers) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::cerr << "sluice produce: --header wants KEY=VALUE, got '" << kv << "'\n";
            return usage_exit_code;
        }
        headers.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    delivery_counts counts;
    auto rk = make_rd_kafka(RD_KAFKA_PRODUCER, o.broker,
                            {{"acks", "all"},
                             {"enable.idempotence", "true"},
                             // The Java client's partitioner: a key lands where it would.
                             {"partitioner", "murmur2_random"},
                             {"delivery.timeout.ms", delivery_timeout_ms}},
                            [&counts](rd_kafka_conf_t* conf) {
                                rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
                                rd_kafka_conf_set_opaque(conf, &counts);
                            });
    if (!rk) return fail(rk.err().message);
    // An unknown topic fails at once, not after the delivery timeout.
    if (auto n = partition_count(rk->get(), o.topic); !n) return fail(n.err().message);
    int64_t lines = 0;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (auto e = send_line(rk->get(), o, headers, line); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::cerr << fmt::format("error: line {}: {}\n", lines + 1, rd_kafka_err2str(e));
            ++counts.failed;
            break;
        }
        ++lines;
        rd_kafka_poll(rk->get(), 0);
    }
    // flush() waits for every delivery report, each within delivery.timeout.ms.
    rd_kafka_flush(rk->get(), -1);
    std::cerr << fmt::format("produced {} record{} to '{}'", counts.delivered,
                             counts.delivered == 1 ? "" : "s", o.topic);
    if (counts.failed == 0) {
        std::cerr << "\n";
        return 0;
    }
    std::cerr << fmt::format("; {} failed{}\n", counts.failed,
                             counts.first_error.empty() ? "" : " (" + counts.first_error + ")");
    return 1;
}

}  // namespace

void add_produce_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<produce_options>();
    auto* cmd = app.add_subcommand("produce", "Send one record per line of stdin to a topic");
    cmd->add_option("topic", opts->topic, "Topic name")->required();
    cmd->add_option("--key-separator,-K", opts->key_separator,
                    "Text between key and value on each line (default: no key)");
    cmd->add_option("--header,-H", opts->headers, "Header KEY=VALUE on every record (repeatable)");
    cmd->add_option("--partition,-p", opts->partition, "Partition (default: by key)");
    add_broker_flags(cmd, opts->broker);
    cmd->callback([opts, &exit_code] { exit_code = produce(*opts); });
}

}  // namespace sluice::app
