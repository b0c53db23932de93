#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace sluice::net {

// Default-initialises where std::allocator value-initialises: growing a byte buffer
// ahead of a read or a copy leaves the new bytes as they are instead of zeroing them
// first.
template <class T>
struct uninitialized_allocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = uninitialized_allocator<U>;
    };
    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

// A byte buffer that is filled right after it grows (recv, SSL_read, memcpy).
using raw_buffer = std::vector<uint8_t, uninitialized_allocator<uint8_t>>;

}  // namespace sluice::net
