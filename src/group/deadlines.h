#pragma once

// The deadlines of a group coordinator (classic and consumer alike): keyed by kind,
// group and member, each remembered in a slot of its owner so that it can be re-armed or
// disarmed, and handed back in time order once due. Kind is the coordinator's enum.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace sluice::group {

template <typename Kind>
class deadline_set {
  public:
    struct key {
        int64_t at = 0;
        Kind kind;
        std::string group;
        std::string member;
        auto operator<=>(const key&) const = default;  // NOLINT(modernize-use-nullptr)
    };

    // Called whenever a new deadline becomes the earliest.
    void on_earlier(std::function<void()> fn) { _on_earlier = std::move(fn); }

    // slot holds the armed time (0: none); arming again replaces it.
    void arm(Kind k, const std::string& group, const std::string& member, int64_t& slot,
             int64_t at) {
        disarm(k, group, member, slot);
        slot = at;
        auto it = _set.insert({at, k, group, member}).first;
        if (it == _set.begin() && _on_earlier) _on_earlier();
    }
    void disarm(Kind k, const std::string& group, const std::string& member, int64_t& slot) {
        if (slot == 0) return;
        _set.erase({slot, k, group, member});
        slot = 0;
    }
    std::optional<int64_t> next() const {
        if (_set.empty()) return std::nullopt;
        return _set.begin()->at;
    }
    // The earliest deadline at or before now, removed (its owner must clear its slot).
    std::optional<key> pop_due(int64_t now) {
        if (_set.empty() || _set.begin()->at > now) return std::nullopt;
        key k = *_set.begin();
        _set.erase(_set.begin());
        return k;
    }

  private:
    std::set<key> _set;
    std::function<void()> _on_earlier;
};

}  // namespace sluice::group
