#pragma once

// The transaction coordinator: Kafka's transactions (KIP-98, KIP-447, KIP-360, KIP-890)
// for every transactional id, on one thread (the broker's loop).
//
// It knows nothing of sockets, logs or SQLite. State goes to a state_store before each
// answer that depends on it; the markers that end a transaction are written by a
// `participants` (the broker writes them to the partition logs and makes the pending
// offsets the groups' committed offsets). Ending a transaction:
//   Ongoing --EndTxn--> PrepareCommit/PrepareAbort (durable) --markers and offsets
//   durable--> CompleteCommit/CompleteAbort (durable) --> the EndTxn is answered.
// A transaction found in a prepare state at start-up (recover()) is completed the same
// way; one open past its timeout is aborted by expire() with its producer fenced.
//
// Transaction version 2 (EndTxn v5+, Produce v12, TxnOffsetCommit v5): every end bumps
// the producer epoch, and an exhausted epoch moves the producer to a new producer id.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "txn/state_store.h"
#include "txn/types.h"

namespace sluice::txn {

// Outcomes, mapped to Kafka's error codes by the handlers (which also pick
// INVALID_PRODUCER_EPOCH over PRODUCER_FENCED for the versions before KIP-588).
enum class txn_error : uint8_t {
    none,
    invalid_producer_id_mapping,  // no such transactional id, or another producer id
    producer_fenced,              // an older epoch: a newer instance took over
    concurrent_transactions,      // the previous transaction is still being completed
    invalid_txn_state,            // not allowed in the transaction's state
    not_in_transaction,  // KIP-890's verification: the partition or group is not part of an
                         // ongoing transaction (TRANSACTION_ABORTABLE for clients that know it)
    invalid_transaction_timeout,  // outside 1..max_timeout_ms
    not_available,                // the state could not be stored or ids allocated
    // TxnOffsetCommit at a broker that no longer coordinates the group: another broker took
    // the group's coordinator epoch (shared mode); the client looks the coordinator up again.
    not_coordinator,
};
std::string_view error_text(txn_error e);

struct producer_answer {
    txn_error error = txn_error::none;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
};

// What ending a transaction needs from the rest of the broker.
class participants {
  public:
    using done_fn = std::function<void(result<void>)>;
    virtual ~participants() = default;
    // Writes a COMMIT or ABORT marker with producer_id and producer_epoch to every
    // partition of t and, at commit, makes t's pending offsets the groups' committed
    // offsets; done runs on the coordinator's thread once all of it is durable.
    virtual void complete(const txn_metadata& t, bool commit, done_fn done) = 0;
    // After the write that completed a commit was stored, with the offsets the transaction
    // had pending. Shared mode's store makes them the groups' committed offsets in that
    // write (state_store::put), so complete() leaves them and this takes them into the
    // groups' memory; single-node mode's complete() wrote them already.
    virtual void offsets_committed(const std::vector<pending_offset>& offsets) { (void)offsets; }
};

struct settings {
    int32_t max_timeout_ms = 900000;  // --transaction-max-timeout-ms (Kafka's default)
    // --transactional-id-expiration-ms (Kafka's transactional.id.expiration.ms, 7 days):
    // an id with no open transaction and no change for longer is forgotten.
    int64_t id_expiration_ms = 604800000;
};

// ListTransactions' filters (Kafka's TransactionStateManager.listTransactionStates);
// an empty list or a negative duration does not filter.
struct list_filter {
    std::vector<txn_state> states;
    std::vector<int64_t> producer_ids;
    // Only transactions open for longer than this (ms); ids without one are left out.
    int64_t min_duration_ms = -1;
};

struct services {
    state_store* store = nullptr;
    participants* parts = nullptr;
    std::function<result<int64_t>()> allocate_producer_id;
    std::function<int64_t()> wall_ms;
    // Shared mode (docs/shared-mode.md#transactions): the store is shared by every
    // broker's coordinator, so each operation reads its id afresh first (refresh), and
    // `owns` says which ids this broker coordinates: only those are completed when found
    // prepared, expired and listed here. Unset: one coordinator owns every id.
    bool shared_store = false;
    std::function<bool(const std::string&)> owns;
};

class coordinator {
  public:
    using answer_fn = std::function<void(producer_answer)>;

    coordinator(settings cfg, services svc);
    coordinator(const coordinator&) = delete;
    coordinator& operator=(const coordinator&) = delete;

    // At start-up: loads every stored id and completes the transactions found in a
    // prepare state (their markers are written again; a partition ignores a repeat).
    result<void> recover();

    // InitProducerId with a transactional id. producer_id/epoch: KIP-360's current ones
    // (-1 for none). An ongoing transaction is aborted (its producer fenced) and the
    // answer is CONCURRENT_TRANSACTIONS: the client retries and gets the next epoch.
    void init_producer_id(const std::string& id, int32_t timeout_ms, int64_t producer_id,
                          int16_t producer_epoch, const answer_fn& cb);
    // AddPartitionsToTxn (and Produce v12's implicit add, tv2 = true).
    txn_error add_partitions(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                             const std::vector<topic_partition>& tps, bool tv2 = false);
    // Whether every tp is in the ongoing transaction of this producer (KIP-890 part 1:
    // a transactional Produce below v12, and AddPartitionsToTxn v4+ verify_only).
    txn_error verify_partitions(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                                const std::vector<topic_partition>& tps);
    // AddOffsetsToTxn.
    txn_error add_group(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                        const std::string& group_id);
    // TxnOffsetCommit: offsets pending with the transaction. add_group (TxnOffsetCommit
    // v5, transaction version 2) adds the group implicitly; otherwise it must have been
    // added (not_in_transaction).
    txn_error commit_offsets(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                             const std::string& group_id, std::vector<pending_offset> offsets,
                             bool add_group);
    // EndTxn; tv2 for v5+. Answers once the transaction is complete (or refused).
    void end_txn(const std::string& id, int64_t producer_id, int16_t producer_epoch, bool commit,
                 bool tv2, const answer_fn& cb);

    // OffsetFetch require_stable: whether an open transaction holds an offset for tp
    // (shared mode: those ids read afresh first, as another broker may have ended them).
    bool has_pending_offset(const std::string& group_id, const topic_partition& tp);
    // Aborts every transaction open longer than its timeout, and retries completions
    // that failed. Returns how many it aborted.
    size_t expire();

    // Forgets (durably) every id with no open transaction that has not changed for
    // longer than id_expiration_ms, and with it its producer id. Returns how many.
    size_t remove_expired_ids();

    // Shared mode: reads the id's record afresh from the store (unless this coordinator is
    // completing it), completing it when it is found prepared and owned here.
    void refresh(const std::string& id);
    // Shared mode: reads every record afresh (expiry and listing of the owned ids).
    void refresh_all();
    bool owns(const std::string& id) const { return !_svc.owns || _svc.owns(id); }

    const txn_metadata* find(const std::string& id) const;
    std::vector<txn_metadata> all() const;
    // The ids that pass f, in id order (ListTransactions).
    std::vector<txn_metadata> list(const list_filter& f) const;

  private:
    enum class end_mode : uint8_t { client_tv1, client_tv2, fence };
    txn_error check_producer(const txn_metadata* t, int64_t producer_id, int16_t epoch) const;
    // Stores next (made from the record at next.version) and makes it the id's state.
    // lost_race: another broker changed the record since it was read (shared mode); the
    // id has been read again, and _lost_race is set so that the operation decides again.
    // fenced: a TxnOffsetCommit's write (by_group set: the group whose coordinator makes it)
    // was refused, another broker coordinates the group now.
    enum class saved : uint8_t { stored, lost_race, failed, fenced };
    saved save(txn_metadata next, const std::string* by_group = nullptr);
    // Runs op (which reads the id afresh and decides) again while its write loses a race
    // with another broker's, at most max_race_attempts times; then the answer is
    // CONCURRENT_TRANSACTIONS, which clients retry.
    static constexpr int max_race_attempts = 3;
    txn_error decide(const std::function<txn_error()>& op);
    producer_answer init_once(const std::string& id, int32_t timeout_ms, int64_t producer_id,
                              int16_t producer_epoch);
    txn_error add_partitions_once(const std::string& id, int64_t producer_id,
                                  int16_t producer_epoch, const std::vector<topic_partition>& tps,
                                  bool tv2);
    txn_error add_group_once(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                             const std::string& group_id);
    txn_error commit_offsets_once(const std::string& id, int64_t producer_id,
                                  int16_t producer_epoch, const std::string& group_id,
                                  const std::vector<pending_offset>& offsets, bool add_group);
    void end_txn_once(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                      bool commit, bool tv2, const answer_fn& cb);
    // Takes the stored record (nullopt: none) as the id's state.
    void adopt(const std::string& id, std::optional<txn_metadata> t);
    // Ongoing -> Prepare*: durable, then markers; cb (optional) once complete. A lost race
    // leaves cb uncalled (_lost_race says so).
    void begin_end(const txn_metadata& t, bool commit, end_mode mode, const answer_fn& cb);
    void run_completion(const std::string& id);
    void finish(const std::string& id, const result<void>& r);
    // TV2: ends an empty transaction with only an epoch bump (KAFKA-18401).
    producer_answer bump_empty(const txn_metadata& t, bool commit);

    settings _cfg;
    services _svc;
    std::map<std::string, txn_metadata> _txns;
    // Ids whose markers are being written, with the EndTxn answers waiting for them.
    std::map<std::string, std::vector<answer_fn>> _completing;
    // Set by save when a write lost a race (see decide).
    bool _lost_race = false;
};

}  // namespace sluice::txn
