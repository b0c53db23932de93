#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

namespace sluice::net {

// A count of bytes shared by connections (Kafka's queued.max.request.bytes): the
// requests being read may hold at most `capacity` bytes together. A connection that
// cannot have what it needs waits in line, and is granted its bytes, in arrival order,
// as others release theirs; nobody jumps the queue, so a large request is never
// starved by a stream of smaller ones. One thread only (the event loop's).
class byte_budget {
  public:
    using waiter_id = uint64_t;

    explicit byte_budget(size_t capacity) : _capacity(capacity) {}
    byte_budget(const byte_budget&) = delete;
    byte_budget& operator=(const byte_budget&) = delete;

    size_t capacity() const { return _capacity; }
    size_t used() const { return _used; }
    size_t waiting() const { return _waiters.size(); }

    // Takes n bytes when they fit and nobody waits; false (nothing taken) otherwise.
    // n above capacity never fits: the caller must refuse such a request instead.
    bool try_acquire(size_t n);
    // Takes n bytes when they fit, ahead of the waiters: for a request of at most one
    // read's size, which holds its bytes for the few moments until the rest arrives.
    bool try_acquire_small(size_t n);
    // The bytes that requests waiting in line already hold in their buffers (read before
    // their size was known): at most `capacity` together, so that memory stays within
    // twice the budget however many connections wait. false: none taken, no room.
    bool try_hold_waiting(size_t n);
    void release_waiting(size_t n);
    size_t held_waiting() const { return _held_waiting; }
    // Queues for n bytes (n <= capacity), after try_acquire(n) failed; `granted` runs
    // from a later release() or cancel() once they are taken on the waiter's behalf,
    // never from wait() itself. Returns an id for cancel().
    waiter_id wait(size_t n, std::function<void()> granted);
    // Leaves the queue; false when not waiting (already granted, or unknown).
    bool cancel(waiter_id id);
    // Gives n bytes back, then grants the waiters at the head of the queue that fit.
    void release(size_t n);

  private:
    struct waiter {
        waiter_id id;
        size_t bytes;
        std::function<void()> granted;
    };
    void grant_waiters();

    size_t _capacity;
    size_t _used = 0;
    size_t _held_waiting = 0;
    std::deque<waiter> _waiters;
    waiter_id _next_id = 1;
    bool _granting = false;  // a granted callback that releases must not recurse
};

}  // namespace sluice::net
