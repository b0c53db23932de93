#include "log/journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/clock.h"
#include "log/file_header.h"
#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;

topic_id id_of(uint8_t b) {
    topic_id id{};
    id.fill(b);
    return id;
}

struct seen_entry {
    uint64_t seq;
    topic_id id;
    std::string topic;
    int32_t partition;
    offset_t base;
    timestamp_ms time;
    bytes data;
};

std::vector<seen_entry> scan_all(const fs::path& dir, journal::scan_result* out = nullptr) {
    std::vector<seen_entry> v;
    auto r = journal::scan(dir, [&](const journal_entry& e) {
        v.push_back({e.seq, e.id, std::string(e.topic), e.partition, e.base_offset, e.append_time,
                     bytes(e.data.begin(), e.data.end())});
        return true;
    });
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    if (r && out) *out = *r;
    return v;
}

bytes payload(size_t n, uint8_t fill) {
    return bytes(n, fill);
}

void corrupt_byte(const fs::path& p, int64_t pos) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(pos);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(pos);
    f.write(&c, 1);
}

class journal_test : public ::testing::Test {
  protected:
    fs::path jdir() const { return dir.path / "logs" / ".journal"; }
    void SetUp() override { fs::create_directories(dir.path / "logs"); }
    test::temp_dir dir;
};

TEST_F(journal_test, entries_read_back_in_order_across_sealed_files) {
    journal j({jdir(), 2048}, 7);
    for (int i = 0; i < 12; ++i) {
        auto r = j.append(id_of(static_cast<uint8_t>(i % 3)), "topic" + std::to_string(i % 3),
                          i % 3, 100 + i, 5000 + i, payload(400 + static_cast<size_t>(i), 'a' + i));
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    auto sealed = j.sync();
    ASSERT_TRUE(sealed.ok()) << sealed.err().message;
    // 2 KiB files of ~470-byte entries: four entries each, the last file still active.
    auto files = journal::list(jdir());
    ASSERT_TRUE(files.ok());
    EXPECT_EQ(files->size(), 3u);
    ASSERT_EQ(sealed->size(), 2u);
    EXPECT_EQ((*sealed)[0].path, (*files)[0]);
    EXPECT_EQ((*sealed)[0].partitions,
              (std::vector<topic_partition>{{"topic0", 0}, {"topic1", 1}, {"topic2", 2}}));
    EXPECT_EQ(j.next_seq(), 19u);

    journal::scan_result res;
    auto all = scan_all(jdir(), &res);
    ASSERT_EQ(all.size(), 12u);
    EXPECT_EQ(res.files, 3u);
    EXPECT_EQ(res.last_seq, 18u);
    EXPECT_TRUE(res.stop.empty()) << res.stop;
    for (int i = 0; i < 12; ++i) {
        const auto& e = all[static_cast<size_t>(i)];
        EXPECT_EQ(e.seq, 7u + static_cast<uint64_t>(i));
        EXPECT_EQ(e.id, id_of(static_cast<uint8_t>(i % 3)));
        EXPECT_EQ(e.topic, "topic" + std::to_string(i % 3));
        EXPECT_EQ(e.partition, i % 3);
        EXPECT_EQ(e.base, 100 + i);
        EXPECT_EQ(e.time, 5000 + i);
        EXPECT_EQ(e.data, payload(400 + static_cast<size_t>(i), 'a' + i));
    }
    // A second sync has nothing new to report.
    auto again = j.sync();
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->empty());
}

// Entries wait in memory until a sync writes them; each sync's write lands after the
// last one's, also when appends arrive between syncs and a file fills up in between.
TEST_F(journal_test, entries_reach_the_file_at_sync_and_follow_earlier_ones) {
    journal j({jdir(), 4096}, 1);
    ASSERT_TRUE(j.append(id_of(1), "t", 0, 0, 10, payload(300, 'a')).ok());
    EXPECT_TRUE(scan_all(jdir()).empty());  // not written yet
    ASSERT_TRUE(j.sync().ok());
    ASSERT_EQ(scan_all(jdir()).size(), 1u);
    size_t expected = 1;
    for (int round = 0; round < 6; ++round) {
        for (int i = 0; i < 1 + round; ++i) {
            const auto n = static_cast<int64_t>(expected);
            ASSERT_TRUE(j.append(id_of(1), "t", 0, n, 10 + n,
                                 payload(300 + expected, static_cast<uint8_t>('a' + expected % 26)))
                            .ok());
            ++expected;
        }
        ASSERT_TRUE(j.sync().ok());
        auto all = scan_all(jdir());
        ASSERT_EQ(all.size(), expected) << "round " << round;
        for (size_t k = 0; k < all.size(); ++k) {
            EXPECT_EQ(all[k].base, static_cast<int64_t>(k));
            EXPECT_EQ(all[k].data, payload(300 + k, static_cast<uint8_t>('a' + k % 26)));
        }
    }
    EXPECT_GT(journal::list(jdir())->size(), 1u);  // it did cross into new files
}

TEST_F(journal_test, a_torn_or_damaged_entry_ends_the_scan) {
    {
        journal j({jdir(), 1 << 20}, 0);
        for (int i = 0; i < 5; ++i)
            ASSERT_TRUE(j.append(id_of(1), "t", 0, i, 1, payload(100, 'x')).ok());
        ASSERT_TRUE(j.sync().ok());
    }
    auto files = journal::list(jdir());
    ASSERT_TRUE(files.ok());
    ASSERT_EQ(files->size(), 1u);
    const fs::path f = files->front();
    const auto size = static_cast<int64_t>(fs::file_size(f));
    const int64_t entry = (size - static_cast<int64_t>(file_header_size)) / 5;

    fs::resize_file(f, static_cast<uintmax_t>(size - 10));  // the last entry torn
    journal::scan_result res;
    auto v = scan_all(jdir(), &res);
    EXPECT_EQ(v.size(), 4u);
    EXPECT_NE(res.stop.find("torn"), std::string::npos) << res.stop;

    corrupt_byte(f, static_cast<int64_t>(file_header_size) + 2 * entry + 60);  // in entry 2
    v = scan_all(jdir(), &res);
    EXPECT_EQ(v.size(), 2u);
    EXPECT_NE(res.stop.find("CRC"), std::string::npos) << res.stop;

    // A later run's file continues the sequence after the last good entry: it is read.
    {
        journal j({jdir(), 1 << 20}, 2);
        ASSERT_TRUE(j.append(id_of(1), "t", 0, 2, 1, payload(10, 'y')).ok());
        ASSERT_TRUE(j.sync().ok());
    }
    v = scan_all(jdir(), &res);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[2].data, payload(10, 'y'));
    // One that does not continue it is not.
    {
        journal j({jdir(), 1 << 20}, 9);
        ASSERT_TRUE(j.append(id_of(1), "t", 0, 9, 1, payload(10, 'z')).ok());
        ASSERT_TRUE(j.sync().ok());
    }
    v = scan_all(jdir(), &res);
    EXPECT_EQ(v.size(), 3u);
    EXPECT_NE(res.stop.find("expected 3"), std::string::npos) << res.stop;

    ASSERT_TRUE(journal::remove_all(jdir()).ok());
    EXPECT_TRUE(scan_all(jdir()).empty());
}

TEST_F(journal_test, a_file_of_an_unknown_version_fails_the_scan) {
    fs::create_directories(jdir());
    std::array<uint8_t, file_header_size> h{};
    encode_file_header(h.data(), {file_kind::journal, 2, 0, 0});
    std::ofstream(jdir() / "00000000000000000000.journal", std::ios::binary)
        .write(reinterpret_cast<const char*>(h.data()), h.size());
    auto r = journal::scan(jdir(), [](const journal_entry&) { return true; });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::unsupported);
}

// --- replay through the log manager ---

class journal_replay_test : public ::testing::Test {
  protected:
    void SetUp() override { cfg.id = id_of(9); }

    std::unique_ptr<log_manager> open_at(const fs::path& d,
                                         log_manager::open_summary* sum = nullptr,
                                         size_t max_append = 64 << 10,
                                         int64_t file_bytes = 8 << 20) {
        log_manager::options o{d, 16};
        o.journal_max_append = max_append;
        o.journal_file_bytes = file_bytes;
        auto m = std::make_unique<log_manager>(o);
        m->add_topic("t", 2, cfg);
        auto r = m->open();
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
        if (r && sum) *sum = *r;
        return m;
    }
    // What a power cut leaves when the page cache lost the segment's unsynced tail: a
    // copy of the running broker's files, the segment cut at `keep` bytes.
    fs::path crash_copy(int partition, std::optional<uintmax_t> keep) {
        fs::path copy = other.path / "data";
        fs::copy(dir.path, copy, fs::copy_options::recursive);
        const fs::path seg = test::partition_dir(copy, "t", partition) / "00000000000000000000.log";
        if (keep)
            fs::resize_file(seg, *keep);
        else
            fs::remove_all(seg.parent_path());
        return copy;
    }
    static bytes read_all(partition_log& p) {
        auto r = p.read(0, 1 << 20, true);
        EXPECT_TRUE(r.ok());
        return r ? r->data : bytes{};
    }
    static uintmax_t segment_size(const fs::path& d, int partition) {
        return fs::file_size(test::partition_dir(d, "t", partition) / "00000000000000000000.log");
    }

    test::temp_dir dir;
    test::temp_dir other;
    log_config cfg;
};

TEST_F(journal_replay_test, acknowledged_appends_a_segment_lost_come_back) {
    auto m = open_at(dir.path);
    auto* p0 = m->get("t", 0);
    auto* p1 = m->get("t", 1);
    test::append_durable(*m, p0, make_batch(3, 10), 1000);
    test::append_durable(*m, p0, make_batch(2, 20), 1001);
    const auto keep = segment_size(dir.path, 0);
    for (int i = 0; i < 3; ++i) test::append_durable(*m, p0, make_batch(4, 30 + i), 1002 + i);
    test::append_durable(*m, p1, make_batch(5, 40), 1010);
    const bytes want0 = read_all(*p0);
    const bytes want1 = read_all(*p1);
    auto times = p0->append_times(0, 100);
    ASSERT_TRUE(times.ok());

    const fs::path copy = crash_copy(0, keep);
    ASSERT_LT(segment_size(copy, 0), segment_size(dir.path, 0));
    log_manager::open_summary sum;
    auto m2 = open_at(copy, &sum);
    EXPECT_FALSE(sum.clean_shutdown);
    EXPECT_EQ(sum.journal_entries, 6u);
    EXPECT_EQ(sum.journal_entries_replayed, 3u);
    EXPECT_EQ(sum.journal_partitions_replayed, 1u);
    auto* q0 = m2->get("t", 0);
    EXPECT_EQ(q0->log_end_offset(), 17);
    EXPECT_EQ(q0->high_watermark(), 17);
    EXPECT_EQ(read_all(*q0), want0);
    EXPECT_EQ(read_all(*m2->get("t", 1)), want1);
    auto times2 = q0->append_times(0, 100);
    ASSERT_TRUE(times2.ok());
    EXPECT_EQ(*times2, *times);
    // Replayed, made durable, and the journal emptied; appends go on from there.
    auto files = journal::list(copy / "logs" / ".journal");
    ASSERT_TRUE(files.ok());
    EXPECT_TRUE(files->empty());
    auto a = test::append_durable(*m2, q0, make_batch(1, 50));
    EXPECT_EQ(a.base_offset, 17);
}

// Replayed idempotent batches reach the producer state too: a retry of one that only
// the journal kept is answered with its offsets, not appended again.
TEST_F(journal_replay_test, replayed_idempotent_batches_are_known_to_the_producer_state) {
    auto m = open_at(dir.path);
    auto* p0 = m->get("t", 0);
    auto idem = [](int32_t seq, const std::string& v) {
        sluice::testing::batch_options opt;
        opt.producer_id = 3;
        opt.producer_epoch = 0;
        opt.base_sequence = seq;
        return sluice::testing::build_batch({test::kv("k", v, 1000)}, opt);
    };
    test::append_durable(*m, p0, idem(0, "a"), 1000);
    const auto keep = segment_size(dir.path, 0);
    test::append_durable(*m, p0, idem(1, "b"), 1001);  // lost from the segment, in the journal
    const fs::path copy = crash_copy(0, keep);
    log_manager::open_summary sum;
    auto m2 = open_at(copy, &sum);
    EXPECT_EQ(sum.journal_entries_replayed, 1u);
    auto* q0 = m2->get("t", 0);
    ASSERT_EQ(q0->log_end_offset(), 2);
    auto prods = q0->producers(now_ms());
    ASSERT_TRUE(prods.ok());
    ASSERT_EQ(prods->size(), 1u);
    EXPECT_EQ((*prods)[0].last()->last_seq, 1);
    auto dup = test::append(*q0, idem(1, "b"), now_ms());
    ASSERT_TRUE(dup.ok());
    EXPECT_EQ(dup->verdict, sequence_verdict::duplicate);
    EXPECT_EQ(dup->base_offset, 1);
    EXPECT_EQ(q0->log_end_offset(), 2);
}

TEST_F(journal_replay_test, a_partition_directory_lost_whole_is_rebuilt) {
    auto m = open_at(dir.path);
    auto* p1 = m->get("t", 1);
    test::append_durable(*m, p1, make_batch(2, 10));
    test::append_durable(*m, p1, make_batch(3, 20));
    const bytes want = read_all(*p1);
    log_manager::open_summary sum;
    auto m2 = open_at(crash_copy(1, std::nullopt), &sum);
    EXPECT_EQ(sum.journal_entries_replayed, 2u);
    EXPECT_EQ(read_all(*m2->get("t", 1)), want);
    EXPECT_EQ(m2->get("t", 1)->high_watermark(), 5);
}

TEST_F(journal_replay_test, entries_of_another_topic_incarnation_are_dropped) {
    auto m = open_at(dir.path);
    test::append_durable(*m, m->get("t", 0), make_batch(2, 10));
    const fs::path copy = crash_copy(0, std::nullopt);
    cfg.id = id_of(10);  // "t" deleted and created again
    log_manager::open_summary sum;
    auto m2 = open_at(copy, &sum);
    EXPECT_EQ(sum.journal_entries_stale, 1u);
    EXPECT_EQ(sum.journal_entries_replayed, 0u);
    EXPECT_EQ(m2->get("t", 0)->log_end_offset(), 0);
}

TEST_F(journal_replay_test, large_appends_skip_the_journal_and_a_gap_stops_replay) {
    // Appends over 200 bytes go to their partition only.
    auto m = open_at(dir.path, nullptr, 200);
    auto* p0 = m->get("t", 0);
    test::append_durable(*m, p0, make_batch(1, 10, 8));
    const auto keep = segment_size(dir.path, 0);
    test::append_durable(*m, p0, make_batch(4, 20, 100));  // large
    test::append_durable(*m, p0, make_batch(1, 30, 8));
    size_t journaled = 0;
    ASSERT_TRUE(journal::scan(dir.path / "logs" / ".journal", [&](const journal_entry& e) {
                    EXPECT_LE(e.data.size(), 200u);
                    ++journaled;
                    return true;
                }).ok());
    EXPECT_EQ(journaled, 2u);
    // The large append was fsynced in its segment before it was acknowledged, so a lost
    // segment tail holding it never happens to acknowledged data; had it happened, the
    // journal entry after it may not be replayed across the gap.
    log_manager::open_summary sum;
    auto m2 = open_at(crash_copy(0, keep), &sum, 200);
    EXPECT_EQ(sum.journal_entries_replayed, 0u);
    EXPECT_EQ(m2->get("t", 0)->log_end_offset(), 1);
}

TEST_F(journal_replay_test, a_journal_that_fails_leaves_appends_to_their_partitions) {
    auto m = open_at(dir.path);
    // Something in the journal's place: its first file cannot be created.
    std::ofstream(dir.path / "logs" / ".journal") << "in the way";
    auto* p0 = m->get("t", 0);
    auto a = test::append_durable(*m, p0, make_batch(3, 10));
    auto b = test::append_durable(*m, p0, make_batch(2, 20));
    EXPECT_EQ(a.base_offset, 0);
    EXPECT_EQ(b.base_offset, 3);
    EXPECT_EQ(p0->high_watermark(), 5);
    EXPECT_EQ(test::batches_of(read_all(*p0)).size(), 2u);
}

TEST_F(journal_replay_test, full_files_go_once_their_partitions_are_fsynced) {
    auto m = open_at(dir.path, nullptr, 64 << 10, 4096);
    for (int i = 0; i < 60; ++i)
        test::append_durable(*m, m->get("t", i % 2), make_batch(2, i, 200));
    // Each entry is about 560 bytes, so 60 of them filled several 4 KiB files; all but
    // the active one go once the flusher has fsynced their partitions.
    const fs::path jd = dir.path / "logs" / ".journal";
    size_t left = 0;
    for (int i = 0; i < 500; ++i) {
        auto files = journal::list(jd);
        ASSERT_TRUE(files.ok());
        left = files->size();
        if (left == 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(left, 1u);
    EXPECT_EQ(m->get("t", 0)->high_watermark(), 60);
    EXPECT_EQ(m->get("t", 1)->high_watermark(), 60);
    // A clean shutdown empties the journal.
    m->close();
    auto files = journal::list(jd);
    ASSERT_TRUE(files.ok());
    EXPECT_TRUE(files->empty());
}

}  // namespace
}  // namespace sluice::log
