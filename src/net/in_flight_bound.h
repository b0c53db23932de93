#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>

namespace sluice::net {

// A bound on the bytes of requests read and not yet answered, all connections together
// (docs/operations.md, "Limits"). Each connection keeps an account of what it holds;
// after reading a request it asks may_read() whether to read the next one:
//
//   - a connection holding nothing may always read one request, so that no client is
//     shut out however much the others hold;
//   - below half the capacity, every connection reads (its own limits aside);
//   - from half the capacity on, a connection holding more than its fair share (the
//     capacity divided by the connections holding something) stops first, so that one
//     greedy client cannot take the whole bound from the others;
//   - at the capacity, every connection holding something stops.
//
// A connection told to stop waits in line; as bytes are released its `room` callback
// runs, in line order, once it may read again. Invariant: used() stays within the
// capacity plus one request per connection (a read is allowed below the capacity, and
// the request read may pass it; and each connection holding nothing may read one).
// One thread only (the event loop's).
class in_flight_bound {
  public:
    // `changed` runs after every change of used() (a metric's gauge).
    explicit in_flight_bound(size_t capacity,
                             std::function<void(const in_flight_bound&)> changed = {})
        : _capacity(capacity), _changed(std::move(changed)) {}
    in_flight_bound(const in_flight_bound&) = delete;
    in_flight_bound& operator=(const in_flight_bound&) = delete;

    size_t capacity() const { return _capacity; }
    size_t used() const { return _used; }
    // The most used() has been since the bound was made.
    size_t peak() const { return _peak; }
    // Connections holding bytes, and those waiting in line to read again.
    size_t holders() const { return _holders; }
    size_t waiting() const { return _line.size(); }
    // Times a connection was told to stop (may_read() false while not in line).
    uint64_t stops() const { return _stops; }
    // From half the capacity on, what one connection may hold and still read: the
    // capacity shared evenly by the connections holding something.
    size_t fair_share() const { return _capacity / (_holders == 0 ? 1 : _holders); }

    // One connection's bytes. Destroying it gives them back and leaves the line.
    class account {
      public:
        account(std::shared_ptr<in_flight_bound> bound, std::function<void()> room);
        ~account();
        account(const account&) = delete;
        account& operator=(const account&) = delete;

        // A request of n bytes was read.
        void add(size_t n);
        // A request of n bytes was answered (or dropped with its connection); the
        // accounts in line that may read now are told so.
        void release(size_t n);
        // Whether the connection may read another request now. false: it is in line, and
        // `room` runs (once) when it may.
        bool may_read();
        size_t held() const { return _held; }
        bool in_line() const { return _place != 0; }
        const in_flight_bound& bound() const { return *_bound; }

      private:
        friend class in_flight_bound;
        std::shared_ptr<in_flight_bound> _bound;
        std::function<void()> _room;
        size_t _held = 0;
        uint64_t _place = 0;  // its key in the line; 0: not in line
    };

  private:
    bool allows(const account& a) const;
    // Runs the `room` of the accounts in line that may read now, in line order.
    void wake();

    size_t _capacity;
    std::function<void(const in_flight_bound&)> _changed;
    size_t _used = 0;
    size_t _peak = 0;
    size_t _holders = 0;  // accounts with held() > 0
    uint64_t _stops = 0;
    std::map<uint64_t, account*> _line;  // by place: arrival order
    uint64_t _next_place = 1;
    bool _waking = false;       // a `room` that releases must not walk the line again...
    bool _wake_again = false;  // ...but have the walk under way start over
};

}  // namespace sluice::net
