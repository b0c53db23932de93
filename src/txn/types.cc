#include "txn/types.h"

#include <algorithm>

namespace sluice::txn {
namespace {

constexpr std::pair<txn_state, std::string_view> names[] = {
    {txn_state::empty, "Empty"},
    {txn_state::ongoing, "Ongoing"},
    {txn_state::prepare_commit, "PrepareCommit"},
    {txn_state::prepare_abort, "PrepareAbort"},
    {txn_state::complete_commit, "CompleteCommit"},
    {txn_state::complete_abort, "CompleteAbort"},
};

}  // namespace

std::string_view state_name(txn_state s) {
    for (const auto& [v, n] : names)
        if (v == s) return n;
    return "Empty";
}

std::optional<txn_state> parse_state(std::string_view s) {
    for (const auto& [v, n] : names)
        if (n == s) return v;
    return std::nullopt;
}

bool txn_metadata::has_partition(const topic_partition& tp) const {
    return std::binary_search(partitions.begin(), partitions.end(), tp);
}

bool txn_metadata::has_group(const std::string& g) const {
    return std::binary_search(groups.begin(), groups.end(), g);
}

void txn_metadata::add_partition(const topic_partition& tp) {
    auto it = std::lower_bound(partitions.begin(), partitions.end(), tp);
    if (it == partitions.end() || *it != tp) partitions.insert(it, tp);
}

void txn_metadata::add_group(const std::string& g) {
    auto it = std::lower_bound(groups.begin(), groups.end(), g);
    if (it == groups.end() || *it != g) groups.insert(it, g);
}

void txn_metadata::put_offset(pending_offset o) {
    for (auto& p : offsets) {
        if (p.group_id == o.group_id && p.tp == o.tp) {
            p = std::move(o);
            return;
        }
    }
    offsets.push_back(std::move(o));
}

}  // namespace sluice::txn
