#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace sluice {

// Expected failures inside a module are values (STYLE.md: errors flow as values).
enum class errc {
    ok = 0,
    not_found,
    already_exists,
    invalid_argument,
    invalid_config,     // a config key or value the module does not accept
    out_of_range,       // offset outside [log start, log end]
    corrupt,            // CRC or framing mismatch
    too_large,          // batch above max.message.bytes
    invalid_record,     // record-level violation (key/value size, count)
    invalid_timestamp,  // a record timestamp outside the topic's bounds
    unsupported,        // feature not offered (compression, idempotence)
    io_error,
    timed_out,
    shutting_down,
    in_use,  // another object depends on it (a topic with an expansion)
    fenced,  // a newer holder took it over (a group's coordinator epoch, shared mode)
};

struct error {
    errc code = errc::ok;
    std::string message;
    // The errno behind an io_error when one is known (0: none), so that callers can tell a
    // full disk (ENOSPC, EDQUOT), which frees up, from a failing one.
    int sys_errno = 0;
};

// The file system had no room for a write: the operation may succeed once space is freed.
inline bool is_no_space(const error& e) {
    return e.code == errc::io_error && (e.sys_errno == ENOSPC || e.sys_errno == EDQUOT);
}

template <typename T>
class [[nodiscard]] result {
public:
    result(T v) : _v(std::move(v)) {}  // NOLINT(google-explicit-constructor)
    result(error e) : _v(std::move(e)) {}  // NOLINT(google-explicit-constructor)
    result(errc c, std::string msg) : _v(error{c, std::move(msg)}) {}

    bool ok() const { return _v.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(_v); }
    const T& value() const& { return std::get<0>(_v); }
    T&& value() && { return std::get<0>(std::move(_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }
    const error& err() const { return std::get<1>(_v); }
    errc code() const { return ok() ? errc::ok : err().code; }

private:
    std::variant<T, error> _v;
};

template <>
class [[nodiscard]] result<void> {
public:
    result() = default;
    result(error e) : _e(std::move(e)) {}  // NOLINT(google-explicit-constructor)
    result(errc c, std::string msg) : _e{c, std::move(msg)} {}
    bool ok() const { return _e.code == errc::ok; }
    explicit operator bool() const { return ok(); }
    const error& err() const { return _e; }
    errc code() const { return _e.code; }

private:
    error _e;
};

}  // namespace sluice
