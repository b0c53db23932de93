// sluice-shared-probe's log-* commands: shared mode's partition logs (src/shared/
// shared_log.h) over a real S3 server and PostgreSQL, for
// tests/integration/test_shared_log.py. Several probes over the same bucket and
// database are several brokers.
//   log-produce BROKER TOPIC_ID PARTITIONS COUNT [PRODUCER_ID]
//       COUNT one-record batches ("b<BROKER>-<i>") round-robin over the partitions, all
//       submitted at once (the window gathers them); prints "P OFFSET VALUE VERDICT" each
//       and "# objects N" (PRODUCER_ID: idempotent, epoch 0, sequences from 0)
//   log-dup BROKER TOPIC_ID PRODUCER_ID
//       partition 0: sequence 0, the same batch again, then sequence 5; "VERDICT OFFSET"
//   log-read TOPIC_ID PARTITIONS [MAX_BYTES]
//       every record from the log start to the high watermark: "P OFFSET VALUE"
//   log-wait TOPIC_ID PARTITION OFFSET TIMEOUT_MS
//       waits for the high watermark to pass OFFSET: "HW ELAPSED_MS"
//   log-lookup TOPIC_ID PARTITION TS
//       "OFFSET TIMESTAMP" for the first record at TS or later, then for the largest
// Records carry timestamp SLUICE_PROBE_TIMESTAMP_MS (default 1000) plus their partition.
// SLUICE_PRODUCE_WINDOW_MS and SLUICE_WINDOWS_IN_FLIGHT set shared_log_config's;
// SLUICE_PROBE_PAUSE_EVERY spreads log-produce's submissions (below);
// SLUICE_PROBE_METRICS_FILE gets log-produce's metrics (write_metrics).

#include <chrono>
#include <fstream>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "metrics/registry.h"
#include "protocol/record_batch.h"
#include "shared/engine_env.h"
#include "shared/shared_log.h"
#include "support/batch_builder.h"

namespace sluice::shared {

int fail(const error& e);

namespace {

const char* verdict_name(log::sequence_verdict v) {
    switch (v) {
        case log::sequence_verdict::append:
            return "appended";
        case log::sequence_verdict::duplicate:
            return "duplicate";
        case log::sequence_verdict::out_of_order:
            return "out_of_order";
        case log::sequence_verdict::invalid_epoch:
            return "invalid_epoch";
        case log::sequence_verdict::unknown_producer:
            return "unknown_producer";
        default:
            return "other";
    }
}

struct opened {
    std::unique_ptr<object_store> store;
    std::unique_ptr<shared_log> log;
};

result<opened> open_log(int32_t broker) {
    opened o;
    auto store = make_s3_object_store(s3_config_from_env());
    if (!store) return store.err();
    o.store = std::move(*store);
    shared_log_config cfg;
    cfg.broker_id = broker;
    if (const char* w = std::getenv("SLUICE_PRODUCE_WINDOW_MS"))
        cfg.produce_window = std::chrono::milliseconds(std::stoi(w));
    if (const char* n = std::getenv("SLUICE_WINDOWS_IN_FLIGHT"))
        cfg.windows_in_flight = std::stoul(n);
    auto l = shared_log::open(*o.store, pg_config_from_env(), cfg);
    if (!l) return l.err();
    o.log = std::move(*l);
    return o;
}

struct submitted {
    int32_t partition;
    std::string value;
    std::future<result<log::append_info>> outcome;
};

// One record `value` in partition p, as a producer sends it.
submitted submit(shared_log& l, const std::string& topic_id, int32_t p, std::string value,
                 const testing::batch_options& opt) {
    // Record timestamps: SLUICE_PROBE_TIMESTAMP_MS (default 1000) plus the partition.
    const char* ts = std::getenv("SLUICE_PROBE_TIMESTAMP_MS");
    const int64_t base_ts = ts ? std::stoll(ts) : 1000;
    auto batch = testing::build_batch({{std::string("k"), value, base_ts + p, {}}}, opt);
    auto validated = protocol::validate_batches(batch, protocol::batch_limits{});
    auto prom = std::make_shared<std::promise<result<log::append_info>>>();
    submitted s{p, std::move(value), prom->get_future()};
    if (!validated) {
        prom->set_value(validated.err());
        return s;
    }
    l.partition(topic_id, {"t", p})
        .submit_append(batch, *validated, 0,
                       [prom](result<log::append_info> r) { prom->set_value(std::move(r)); });
    return s;
}

// SLUICE_PROBE_METRICS_FILE: the process's metrics (what a broker's GET /metrics shows of
// them) written there in the Prometheus text format.
void write_metrics() {
    const char* path = std::getenv("SLUICE_PROBE_METRICS_FILE");
    if (path == nullptr) return;
    std::ofstream(path) << metrics::global().render();
}

int print_outcome(submitted& s) {
    auto r = s.outcome.get();
    if (!r) return fail(r.err());
    std::cout << s.partition << " " << r->base_offset << " " << s.value << " "
              << verdict_name(r->verdict) << "\n";
    return 0;
}

}  // namespace

int log_command(const std::string& cmd, const std::vector<std::string>& args) {
    if (cmd == "log-produce" && (args.size() == 4 || args.size() == 5)) {
        const int32_t broker = std::stoi(args[0]);
        auto o = open_log(broker);
        if (!o) return fail(o.err());
        const int32_t parts = std::stoi(args[2]);
        const int count = std::stoi(args[3]);
        std::vector<int32_t> seq(parts, 0);
        std::vector<submitted> all;
        // SLUICE_PROBE_PAUSE_EVERY=N: a 5 ms pause after every N submissions, so that
        // they spread over several windows.
        const char* pause = std::getenv("SLUICE_PROBE_PAUSE_EVERY");
        const int pause_every = pause ? std::stoi(pause) : 0;
        for (int i = 0; i < count; ++i) {
            if (pause_every > 0 && i > 0 && i % pause_every == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            const int32_t p = i % parts;
            testing::batch_options opt;
            if (args.size() == 5) {
                opt.producer_id = std::stoll(args[4]);
                opt.producer_epoch = 0;
                opt.base_sequence = seq[p]++;
            }
            all.push_back(submit(*o->log, args[1], p, fmt::format("b{}-{}", broker, i), opt));
        }
        for (auto& s : all)
            if (int rc = print_outcome(s); rc) return rc;
        std::cout << "# objects " << o->log->counters().objects << "\n";
        o->log.reset();  // every window answered and counted
        write_metrics();
        return 0;
    }
    if (cmd == "log-dup" && args.size() == 3) {
        auto o = open_log(std::stoi(args[0]));
        if (!o) return fail(o.err());
        testing::batch_options opt{0, false, {}, std::stoll(args[2]), 0, 0};
        for (int32_t base_seq : {0, 0, 5}) {
            opt.base_sequence = base_seq;
            auto s = submit(*o->log, args[1], 0, fmt::format("seq{}", base_seq), opt);
            auto r = s.outcome.get();  // one at a time: each sees the one before committed
            if (!r) return fail(r.err());
            std::cout << verdict_name(r->verdict) << " " << r->base_offset << "\n";
        }
        return 0;
    }
    if (cmd == "log-read" && (args.size() == 2 || args.size() == 3)) {
        auto o = open_log(0);
        if (!o) return fail(o.err());
        const size_t max_bytes = args.size() == 3 ? std::stoul(args[2]) : 1 << 20;
        for (int32_t p = 0; p < std::stoi(args[1]); ++p) {
            auto& part = o->log->partition(args[0], {"t", p});
            offset_t at = part.log_start_offset();
            for (;;) {
                auto r = part.read(at, max_bytes, true);
                if (!r) return fail(r.err());
                if (r->data.empty()) break;
                bytes_view rest(r->data);
                while (auto h = protocol::read_batch_header(rest)) {
                    if (rest.size() < h->size_bytes()) break;
                    protocol::for_each_record(
                        rest.first(h->size_bytes()), [&](const protocol::record_view& rec) {
                            std::string v(rec.value->begin(), rec.value->end());
                            std::cout << p << " " << rec.offset << " " << v << "\n";
                            return true;
                        });
                    at = h->last_offset() + 1;
                    rest = rest.subspan(h->size_bytes());
                }
            }
        }
        auto c = o->log->cache_counters();
        std::cout << "# cache hits " << c.hits << " misses " << c.misses << "\n";
        return 0;
    }
    if (cmd == "log-wait" && args.size() == 4) {
        auto o = open_log(0);
        if (!o) return fail(o.err());
        auto& part = o->log->partition(args[0], {"t", std::stoi(args[1])});
        std::cout << "ready" << std::endl;
        const auto t0 = std::chrono::steady_clock::now();
        offset_t hw =
            part.wait_for_data(std::stoll(args[2]), std::chrono::milliseconds(std::stoi(args[3])));
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
        std::cout << hw << " " << ms << "\n";
        return 0;
    }
    if (cmd == "log-lookup" && args.size() == 3) {
        auto o = open_log(0);
        if (!o) return fail(o.err());
        auto& part = o->log->partition(args[0], {"t", std::stoi(args[1])});
        for (auto r :
             {part.offset_for_timestamp(std::stoll(args[2])), part.max_timestamp_offset()}) {
            if (!r) return fail(r.err());
            if (*r)
                std::cout << (*r)->offset << " " << (*r)->timestamp << "\n";
            else
                std::cout << "none\n";
        }
        return 0;
    }
    std::cerr
        << "usage: log-produce BROKER TOPIC_ID PARTITIONS COUNT [PRODUCER_ID] | log-dup "
           "BROKER TOPIC_ID PRODUCER_ID | log-read TOPIC_ID PARTITIONS [MAX_BYTES] | "
           "log-wait TOPIC_ID PARTITION OFFSET TIMEOUT_MS | log-lookup TOPIC_ID PARTITION TS\n";
    return 2;
}

}  // namespace sluice::shared
