// sluice-loadgen's consume mode: the simple (per-partition queue) or the assign API.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "loadgen.h"

namespace sluice_loadgen {
namespace {

// ---------------------------------------------------------------------------
// Consume
// ---------------------------------------------------------------------------

struct ConsumeCounters {
    int64_t records = 0;
    int64_t bytes = 0;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    std::map<std::string, int64_t> errors;
};

// Processes one message; returns true if it was a data record or EOF (progress).
bool handle_message(const rd_kafka_message_t* m, ConsumeCounters& c, std::set<int32_t>& eof,
                    bool verbose) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (c.records == 0) c.first_ns = now_ns();
        ++c.records;
        c.bytes += static_cast<int64_t>(m->len);
        eof.erase(m->partition);
        return true;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        eof.insert(m->partition);
        return true;
    }
    std::string key = std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_message_errstr(m);
    int64_t n = ++c.errors[key];
    if (verbose || n == 1) {
        std::fprintf(stderr, "sluice-loadgen: consume error (partition %d): %s\n", m->partition,
                     key.c_str());
    }
    return false;
}

}  // namespace

int run_consume(const Options& o) {
    const int64_t want = o.records.value_or(0);
    ClientState cs;
    cs.verbose = o.verbose;
    rd_kafka_conf_t* conf = base_conf(o, &cs);
    const bool use_assign = o.consumer_api == "assign";
    if (use_assign) {
        conf_set_or_die(conf, "group.id", o.group_id);
        conf_set_or_die(conf, "enable.auto.commit", "false");
        conf_set_or_die(conf, "enable.auto.offset.store", "false");
    }
    conf_set_or_die(conf, "enable.partition.eof", "true");
    // Below glibc's 32 MiB mmap ceiling, so fetch buffers are reused (see main).
    conf_set_or_die(conf, "fetch.max.bytes", "16777216");           // 16 MiB per fetch response
    conf_set_or_die(conf, "max.partition.fetch.bytes", "4194304");  // 4 MiB per partition
    conf_set_or_die(conf, "fetch.wait.max.ms", "100");
    conf_set_or_die(conf, "fetch.min.bytes", "1");
    // Prefetch limit: per partition for the simple consumer, total for assign.
    conf_set_or_die(conf, "queued.max.messages.kbytes", "65536");
    conf_set_or_die(conf, "queued.min.messages", "100000");
    auto [rk, rkt, partitions] = open_client(RD_KAFKA_CONSUMER, conf, o);

    std::printf("sluice-loadgen consume: bootstrap=%s topic=%s partitions=%s records=%s api=%s%s\n",
                o.bootstrap.c_str(), o.topic.c_str(), join_partitions(partitions).c_str(),
                want > 0 ? std::to_string(want).c_str() : "until-eof", o.consumer_api.c_str(),
                o.duration_s > 0 ? (" duration_cap_s=" + fmt_num(o.duration_s)).c_str() : "");
    std::fflush(stdout);

    rd_kafka_queue_t* q = nullptr;
    const int64_t start_ns = now_ns();
    if (use_assign) {
        rd_kafka_resp_err_t err = rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t* tpl =
            rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
        for (int32_t p : partitions)
            rd_kafka_topic_partition_list_add(tpl, o.topic.c_str(), p)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = rd_kafka_assign(rk, tpl);
        rd_kafka_topic_partition_list_destroy(tpl);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "sluice-loadgen: assign failed: %s\n", rd_kafka_err2str(err));
            rd_kafka_topic_destroy(rkt);
            rd_kafka_destroy(rk);
            return kExitUsage;
        }
    } else {
        q = rd_kafka_queue_new(rk);
        for (int32_t p : partitions) {
            if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) == -1) {
                std::fprintf(stderr, "sluice-loadgen: consume_start partition %d failed: %s\n", p,
                             rd_kafka_err2str(rd_kafka_last_error()));
                rd_kafka_queue_destroy(q);
                rd_kafka_topic_destroy(rkt);
                rd_kafka_destroy(rk);
                return kExitUsage;
            }
        }
    }

    ConsumeCounters c;
    std::set<int32_t> eof;
    const int64_t cap_ns =
        o.duration_s > 0 ? start_ns + static_cast<int64_t>(o.duration_s * 1e9) : INT64_MAX;
    const int64_t idle_ns = static_cast<int64_t>(o.idle_timeout_s * 1e9);
    int64_t last_progress = start_ns;
    std::string stop_reason;
    std::vector<rd_kafka_message_t*> batch(4096);

    while (true) {
        if (want > 0 && c.records >= want) {
            stop_reason = "records";
            break;
        }
        if (eof.size() == partitions.size()) {
            stop_reason = "eof";
            break;
        }
        if (g_interrupted.load()) {
            stop_reason = "interrupted";
            break;
        }
        if (cs.fatal.load()) {
            stop_reason = "fatal";
            break;
        }
        int64_t t = now_ns();
        if (t >= cap_ns) {
            stop_reason = "duration";
            break;
        }
        if (t - last_progress > idle_ns) {
            stop_reason = "idle";
            break;
        }

        bool progress = false;
        if (use_assign) {
            rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
            if (m) {
                progress = handle_message(m, c, eof, o.verbose);
                rd_kafka_message_destroy(m);
            }
        } else {
            ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch.data(), batch.size());
            if (n < 0) {
                std::fprintf(stderr, "sluice-loadgen: consume_batch_queue: %s\n",
                             rd_kafka_err2str(rd_kafka_last_error()));
                stop_reason = "fatal";
                break;
            }
            for (ssize_t i = 0; i < n; ++i) {
                progress |= handle_message(batch[static_cast<size_t>(i)], c, eof, o.verbose);
                rd_kafka_message_destroy(batch[static_cast<size_t>(i)]);
            }
        }
        if (progress) last_progress = now_ns();
    }
    c.last_ns = now_ns();

    double elapsed = std::max(1e-9, seconds_between(start_ns, c.last_ns));
    double rps = static_cast<double>(c.records) / elapsed;
    double mbps = static_cast<double>(c.bytes) / elapsed / 1e6;
    double first_ms = c.records > 0 ? static_cast<double>(c.first_ns - start_ns) / 1e6 : 0.0;

    std::printf("\n== consume summary ==\n");
    std::printf("  records consumed  : %" PRId64 " (%" PRId64 " payload bytes), stopped by: %s\n",
                c.records, c.bytes, stop_reason.c_str());
    std::printf(
        "  elapsed           : %.3f s (start of fetching to stop; first record after %.1f ms)\n",
        elapsed, first_ms);
    std::printf(
        "  throughput        : %.0f records/s, %.2f MB/s (MB = 10^6 bytes of record payload)\n",
        rps, mbps);

    int rc = kExitOk;
    int64_t nerr = 0;
    if (!c.errors.empty()) {
        std::fprintf(stderr, "sluice-loadgen: consume errors:\n");
        for (const auto& [k, n] : c.errors) {
            std::fprintf(stderr, "  %" PRId64 " x %s\n", n, k.c_str());
            nerr += n;
        }
        rc = kExitErrors;
    }
    if (stop_reason == "idle") {
        std::fprintf(
            stderr,
            "sluice-loadgen: no progress for %.1f s; giving up (%zu/%zu partitions at EOF)\n",
            o.idle_timeout_s, eof.size(), partitions.size());
        rc = kExitErrors;
    }
    if (stop_reason == "fatal") rc = kExitErrors;
    if (stop_reason == "eof" && want > 0 && c.records < want) {
        std::fprintf(stderr,
                     "sluice-loadgen: reached end of all partitions after %" PRId64
                     " records, fewer than the %" PRId64 " requested\n",
                     c.records, want);
        rc = kExitErrors;
    }
    if (rc == kExitOk && stop_reason == "interrupted") rc = kExitInterrupted;

    std::printf("RESULT mode=consume records=%" PRId64 " rps=%.0f mbps=%.2f bytes=%" PRId64
                " elapsed_s=%.3f first_record_ms=%.1f errors=%" PRId64
                " stop=%s partitions=%zu ok=%d\n",
                c.records, rps, mbps, c.bytes, elapsed, first_ms, nerr, stop_reason.c_str(),
                partitions.size(), rc == kExitOk ? 1 : 0);
    std::fflush(stdout);

    if (use_assign) {
        rd_kafka_assign(rk, nullptr);
        rd_kafka_consumer_close(rk);
    } else {
        for (int32_t p : partitions) rd_kafka_consume_stop(rkt, p);
        rd_kafka_queue_destroy(q);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return rc;
}

}  // namespace sluice_loadgen
