// sluice-shared-probe's mnt-* commands: shared mode's background work
// (src/shared/maintenance/maintenance.h) over a real S3 server and PostgreSQL, for
// tests/integration/test_shared_maintenance.py. Several probes at once are several brokers.
//   mnt-run BROKER
//       one pass (run_once): "job KIND TOPIC_ID PARTITION TOKEN ok|error DETAIL" per job
//       run, then "# merged N moved N copied N deleted_batches N marked N deleted N
//       orphans N ms N". Settings from the environment: SLUICE_MNT_INTERVAL_MS,
//       SLUICE_MNT_LEASE_MS, SLUICE_MNT_GRACE_MS, SLUICE_MNT_MERGE_MIN,
//       SLUICE_MNT_MERGE_SMALL, SLUICE_MNT_MERGE_TARGET, SLUICE_MNT_JOBS (a,b,c)
//   mnt-delete-records TOPIC_ID PARTITION OFFSET
//       DeleteRecords (advance_log_start): prints the log start after it
//   log-bounds TOPIC_ID PARTITION
//       "LOG_START HIGH_WATERMARK" as shared_partition answers ListOffsets
//   log-digest TOPIC_ID PARTITIONS
//       every batch a read returns from the log start: "P BASE_OFFSET SIZE SHA256" (its
//       bytes as a consumer gets them), so that a test compares them across a merge

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <openssl/sha.h>

#include "protocol/record_batch.h"
#include "shared/engine_env.h"
#include "shared/maintenance/maintenance.h"
#include "shared/shared_log.h"

namespace sluice::shared {

int fail(const error& e);

namespace {

std::string sha256_hex(bytes_view data) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data.data(), data.size(), md);
    std::string out;
    for (unsigned char c : md) out += fmt::format("{:02x}", c);
    return out;
}

int64_t env_int(const char* name, int64_t fallback) {
    const char* v = std::getenv(name);
    return v ? std::stoll(v) : fallback;
}

maintenance::settings settings_from_env(int32_t broker) {
    maintenance::settings s;
    s.broker_id = broker;
    s.incarnation = 1;
    s.interval = std::chrono::milliseconds(env_int("SLUICE_MNT_INTERVAL_MS", s.interval.count()));
    s.lease = std::chrono::milliseconds(env_int("SLUICE_MNT_LEASE_MS", s.lease.count()));
    s.delete_grace =
        std::chrono::milliseconds(env_int("SLUICE_MNT_GRACE_MS", s.delete_grace.count()));
    s.merge_min_objects = static_cast<size_t>(env_int("SLUICE_MNT_MERGE_MIN", 8));
    s.merge_small_bytes = static_cast<uint64_t>(env_int("SLUICE_MNT_MERGE_SMALL", 4 << 20));
    s.merge_target_bytes = static_cast<uint64_t>(env_int("SLUICE_MNT_MERGE_TARGET", 64 << 20));
    s.max_jobs_per_pass = static_cast<size_t>(
        env_int("SLUICE_MNT_MAX_JOBS", static_cast<int64_t>(s.max_jobs_per_pass)));
    if (const char* jobs = std::getenv("SLUICE_MNT_JOBS")) {
        s.jobs.clear();
        std::stringstream in(jobs);
        for (std::string j; std::getline(in, j, ',');) s.jobs.push_back(j);
    }
    return s;
}

}  // namespace

int maintenance_command(const std::string& cmd, const std::vector<std::string>& args) {
    auto store = make_s3_object_store(s3_config_from_env());
    if (!store) return fail(store.err());
    auto db = pg_database::connect(pg_config_from_env());
    if (!db) return fail(db.err());
    if (cmd == "mnt-run" && args.size() == 1) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = maintenance::run_once(**db, **store, settings_from_env(std::stoi(args[0])));
        if (!r) return fail(r.err());
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
        for (const auto& j : r->jobs)
            std::cout << "job " << j.kind << " " << (j.topic_id.empty() ? "-" : j.topic_id) << " "
                      << j.partition << " " << j.fencing_token << " " << (j.ok ? "ok " : "error ")
                      << j.detail << "\n";
        std::cout << "# merged " << r->objects_merged << " moved " << r->batches_moved << " copied "
                  << r->bytes_copied << " deleted_batches " << r->batches_deleted << " marked "
                  << r->objects_marked << " deleted " << r->objects_deleted << " orphans "
                  << r->orphans_deleted << " ms " << ms << "\n";
        return 0;
    }
    if (cmd == "mnt-delete-records" && args.size() == 3) {
        auto r =
            maintenance::advance_log_start(**db, args[0], std::stoi(args[1]), std::stoll(args[2]));
        if (!r) return fail(r.err());
        std::cout << *r << "\n";
        return 0;
    }
    if (cmd == "log-bounds" && args.size() == 2) {
        auto l = shared_log::open(**store, pg_config_from_env(), {});
        if (!l) return fail(l.err());
        auto& part = (*l)->partition(args[0], {"t", std::stoi(args[1])});
        std::cout << part.log_start_offset() << " " << part.high_watermark() << "\n";
        return 0;
    }
    if (cmd == "log-digest" && args.size() == 2) {
        auto l = shared_log::open(**store, pg_config_from_env(), {});
        if (!l) return fail(l.err());
        for (int32_t p = 0; p < std::stoi(args[1]); ++p) {
            auto& part = (*l)->partition(args[0], {"t", p});
            for (offset_t at = part.log_start_offset();;) {
                auto r = part.read(at, 1 << 20, true);
                if (!r) return fail(r.err());
                if (r->data.empty()) break;
                bytes_view rest(r->data);
                while (auto h = protocol::read_batch_header(rest)) {
                    if (rest.size() < h->size_bytes()) break;
                    std::cout << p << " " << h->base_offset << " " << h->size_bytes() << " "
                              << sha256_hex(rest.first(h->size_bytes())) << "\n";
                    at = h->last_offset() + 1;
                    rest = rest.subspan(h->size_bytes());
                }
            }
        }
        return 0;
    }
    std::cerr << "usage: mnt-run BROKER | mnt-delete-records TOPIC_ID PARTITION OFFSET | "
                 "log-bounds TOPIC_ID PARTITION | log-digest TOPIC_ID PARTITIONS\n";
    return 2;
}

}  // namespace sluice::shared
