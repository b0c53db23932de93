#pragma once

// Kafka's primitive types on the wire: fixed-width big-endian integers, varints,
// classic (int16/int32 length) and compact (unsigned varint length + 1) strings, bytes
// and arrays. The reader never throws: a short or malformed input sets a sticky
// failure flag and every later read returns a zero value.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>
#include <string>

#include "common/endian.h"
#include "common/types.h"
#include "common/varint.h"

namespace sluice::protocol {

using uuid = std::array<uint8_t, 16>;

class reader {
public:
    explicit reader(bytes_view data) : _data(data) {}

    bool ok() const { return _ok; }
    size_t remaining() const { return _ok ? _data.size() - _pos : 0; }
    size_t position() const { return _pos; }
    void fail() { _ok = false; }

    template <typename T>
    T fixed() {
        if (!need(sizeof(T))) return T{};
        T v = load_be<T>(_data.data() + _pos);
        _pos += sizeof(T);
        return v;
    }
    int8_t i8() { return need(1) ? static_cast<int8_t>(_data[_pos++]) : 0; }
    bool boolean() { return i8() != 0; }
    double f64() {
        auto bits = fixed<uint64_t>();
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
    }
    uint32_t uvarint() {
        uint64_t v = 0;
        size_t n = _ok ? decode_uvarint(_data.data() + _pos, _data.size() - _pos, v, 5) : 0;
        if (n == 0 || v > 0xffffffffULL) {
            _ok = false;
            return 0;
        }
        _pos += n;
        return static_cast<uint32_t>(v);
    }
    uuid read_uuid() {
        uuid u{};
        if (need(16)) {
            std::memcpy(u.data(), _data.data() + _pos, 16);
            _pos += 16;
        }
        return u;
    }
    bytes_view raw(size_t n) {
        if (!need(n)) return {};
        bytes_view v = _data.subspan(_pos, n);
        _pos += n;
        return v;
    }
    // Length of a string, bytes or array; -1 means null.
    int64_t length(bool compact, bool wide) {
        if (compact) return static_cast<int64_t>(uvarint()) - 1;
        return wide ? fixed<int32_t>() : fixed<int16_t>();
    }
    // -1 is null; any other negative length is malformed (not taken as null).
    std::optional<std::string> nullable_string(bool compact) {
        int64_t n = length(compact, false);
        if (n < -1) _ok = false;
        if (n < 0) return std::nullopt;
        auto v = raw(static_cast<size_t>(n));
        return std::string(reinterpret_cast<const char*>(v.data()), v.size());
    }
    std::optional<bytes> nullable_bytes(bool compact) {
        auto v = nullable_bytes_view(compact);
        if (!v) return std::nullopt;
        return bytes(v->begin(), v->end());
    }
    // The same field as a view into the input, valid while the input is.
    std::optional<bytes_view> nullable_bytes_view(bool compact) {
        int64_t n = length(compact, true);
        if (n < -1) _ok = false;
        if (n < 0) return std::nullopt;
        return raw(static_cast<size_t>(n));
    }
    // Array length, checked against what is left so a forged count cannot make the
    // caller reserve gigabytes: every element takes at least one byte.
    int64_t array_length(bool compact) {
        int64_t n = length(compact, true);
        if (n > static_cast<int64_t>(remaining())) {
            _ok = false;
            return 0;
        }
        return n;
    }

private:
    bool need(size_t n) {
        if (!_ok || _data.size() - _pos < n) {
            _ok = false;
            return false;
        }
        return true;
    }

    bytes_view _data;
    size_t _pos = 0;
    bool _ok = true;
};

// A RECORDS field: decoded into bytes; encoded from bytes or, on the broker's fetch
// path, from a file slice that the connection sends with sendfile.
struct records {
    std::optional<bytes> data;
    file_slice slice;

    records() = default;
    records(std::optional<bytes> d) : data(std::move(d)) {}  // NOLINT(google-explicit-constructor)
    size_t size() const { return slice.size ? slice.size : (data ? data->size() : 0); }
    bool operator==(const records& o) const { return data == o.data && slice.size == o.slice.size; }
};

// Where an encoded frame takes bytes from a file: at byte `at` of the encoded buffer.
struct splice {
    size_t at = 0;
    file_slice slice;
};

class writer {
public:
    explicit writer(bytes& out, std::vector<splice>* splices = nullptr)
        : _out(out), _splices(splices) {}

    bytes& buffer() { return _out; }
    size_t size() const { return _out.size(); }

    template <typename T>
    void fixed(T v) {
        size_t at = grow(sizeof(T));
        store_be<T>(_out.data() + at, v);
    }
    void i8(int8_t v) { _out.push_back(static_cast<uint8_t>(v)); }
    void boolean(bool v) { i8(v ? 1 : 0); }
    void f64(double d) {
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof d);
        fixed<uint64_t>(bits);
    }
    void uvarint(uint64_t v) {
        uint8_t tmp[10];
        size_t n = encode_uvarint(tmp, v);
        _out.insert(_out.end(), tmp, tmp + n);
    }
    void write_uuid(const uuid& u) { _out.insert(_out.end(), u.begin(), u.end()); }
    void raw(bytes_view v) { _out.insert(_out.end(), v.begin(), v.end()); }
    void raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        _out.insert(_out.end(), b, b + n);
    }
    // -1 for null.
    void length(int64_t n, bool compact, bool wide) {
        if (compact)
            uvarint(static_cast<uint64_t>(n + 1));
        else if (wide)
            fixed<int32_t>(static_cast<int32_t>(n));
        else
            fixed<int16_t>(static_cast<int16_t>(n));
    }
    void string(std::string_view s, bool compact) {
        length(static_cast<int64_t>(s.size()), compact, false);
        raw(s.data(), s.size());
    }
    void nullable_string(const std::optional<std::string>& s, bool compact) {
        if (!s)
            length(-1, compact, false);
        else
            string(*s, compact);
    }
    void bytes_field(bytes_view b, bool compact) {
        length(static_cast<int64_t>(b.size()), compact, true);
        raw(b);
    }
    // RECORDS: the length, then the bytes, or a splice of the file slice when the
    // writer collects splices.
    void records_field(const records& r, bool compact) {
        if (r.slice.size > 0 && _splices != nullptr) {
            length(static_cast<int64_t>(r.slice.size), compact, true);
            _splices->push_back({_out.size(), r.slice});
            return;
        }
        if (r.slice.size > 0) throw std::logic_error("file slice without a splice list");
        if (!r.data)
            length(-1, compact, true);
        else
            bytes_field(*r.data, compact);
    }
    // Reserves room to patch later (frame sizes).
    size_t grow(size_t n) {
        size_t at = _out.size();
        _out.resize(at + n);
        return at;
    }

private:
    bytes& _out;
    std::vector<splice>* _splices;
};

}  // namespace sluice::protocol
