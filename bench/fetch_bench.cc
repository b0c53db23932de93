// sluice-fetchbench: measures how fast the broker serves Fetch, with a client that
// does almost nothing per record (it walks batch headers only), so that the figure is
// the broker's and the loopback's rather than a client library's. It speaks the
// protocol through Sluice's own codecs (src/protocol) over one blocking connection.
//
//   sluice-fetchbench --bootstrap HOST:PORT --topic T [--partitions N] [--max-bytes B]
//                     [--partition-max-bytes B]

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/admin_client.h"
#include "bench_cli.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/record_batch.h"

using namespace sluice;

namespace {

struct options {
    std::string bootstrap = "127.0.0.1:9092";
    std::string topic;
    int32_t partitions = 1;
    // Below glibc's 32 MiB mmap ceiling, so response buffers are reused.
    int32_t max_bytes = 16 * 1024 * 1024;
    int32_t partition_max_bytes = 4 * 1024 * 1024;
};

[[noreturn]] void die(const std::string& msg) { bench::die("sluice-fetchbench", msg); }

options parse(int argc, char** argv) {
    options o;
    bench::parse_flags("sluice-fetchbench", argc, argv, [&](const std::string& a, const std::string& v) {
        if (a == "--bootstrap") o.bootstrap = v;
        else if (a == "--topic") o.topic = v;
        else if (a == "--partitions") o.partitions = std::stoi(v);
        else if (a == "--max-bytes") o.max_bytes = std::stoi(v);
        else if (a == "--partition-max-bytes") o.partition_max_bytes = std::stoi(v);
        else return false;
        return true;
    });
    if (o.topic.empty()) die("--topic is required");
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    options o = parse(argc, argv);
    // Keep freed response buffers in the heap for reuse: first-touch page faults cost
    // more than the copies on virtual machines, and would measure the client.
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    auto addr = net::parse_host_port(o.bootstrap);
    if (!addr) die(addr.err().message);
    app::admin_client c;
    if (auto r = c.connect(*addr); !r) die(r.err().message);

    // Read up to each partition's high watermark as it is at the start.
    protocol::list_offsets_request lo;
    auto& lt = lo.topics.emplace_back();
    lt.name = o.topic;
    for (int32_t p = 0; p < o.partitions; ++p) lt.partitions.push_back({p, -1, -1, 1});
    auto ends = c.call<protocol::list_offsets_request, protocol::list_offsets_response>(
        protocol::api_key::list_offsets, 5, lo);
    if (!ends) die(ends.err().message);
    std::vector<int64_t> end(static_cast<size_t>(o.partitions), 0), next(end.size(), 0);
    for (const auto& t : ends->topics)
        for (const auto& p : t.partitions) {
            if (p.error_code != 0) die("ListOffsets error " + std::to_string(p.error_code));
            end[static_cast<size_t>(p.partition_index)] = p.offset;
        }

    uint64_t records = 0, record_bytes = 0, fetches = 0;
    auto start = std::chrono::steady_clock::now();
    for (;;) {
        protocol::fetch_request req;
        req.max_wait_ms = 0;
        req.min_bytes = 1;
        req.max_bytes = o.max_bytes;
        auto& ft = req.topics.emplace_back();
        ft.name = o.topic;
        for (int32_t p = 0; p < o.partitions; ++p)
            if (next[static_cast<size_t>(p)] < end[static_cast<size_t>(p)])
                ft.partitions.push_back({p, -1, next[static_cast<size_t>(p)], -1, -1,
                                         o.partition_max_bytes});
        if (ft.partitions.empty()) break;
        auto resp = c.call<protocol::fetch_request, protocol::fetch_response>(
            protocol::api_key::fetch, 11, req);
        if (!resp) die(resp.err().message);
        ++fetches;
        for (const auto& t : resp->responses)
            for (const auto& p : t.partitions) {
                if (p.error_code != 0) die("Fetch error " + std::to_string(p.error_code));
                const bytes& data = p.records.data ? *p.records.data : bytes{};
                size_t pos = 0;
                // Whole batches only; a trailing partial batch is fetched next time.
                while (auto h = protocol::read_batch_header(bytes_view(data).subspan(pos))) {
                    if (pos + h->size_bytes() > data.size()) break;
                    if (h->last_offset() >= next[static_cast<size_t>(p.partition_index)]) {
                        records += static_cast<uint64_t>(h->record_count);
                        record_bytes += h->size_bytes();
                        next[static_cast<size_t>(p.partition_index)] = h->last_offset() + 1;
                    }
                    pos += h->size_bytes();
                }
            }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fetched %llu records, %.1f MB of batches in %.3f s with %llu fetches\n",
                static_cast<unsigned long long>(records), record_bytes / 1e6, secs,
                static_cast<unsigned long long>(fetches));
    std::printf("RESULT mode=fetch records=%llu rps=%.0f mbps=%.2f elapsed_s=%.3f\n",
                static_cast<unsigned long long>(records), records / secs,
                record_bytes / 1e6 / secs, secs);
    return 0;
}
