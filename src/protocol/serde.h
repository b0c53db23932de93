#pragma once

// Encode and decode are both derived from one declaration per message: a struct lists
// its fields once in a `serde` member template,
//
//   template <typename F> void serde(F& f) {
//       f(name);                      // every version
//       f(topic_id, since(10));       // versions 10 and later
//       f(replica_id, range(0, 14));  // versions 0 to 14
//       f(topics, range(0, 7), nullable(since(2)));  // null only in versions 2 to 7
//       f.tagged(0, cluster_id, since(12));
//   }
//
// and the field's C++ type picks its wire type: intN_t, bool, double, uuid, std::string
// (STRING / COMPACT_STRING), std::optional<std::string> (nullable), bytes and
// std::optional<bytes> (BYTES / RECORDS), std::vector<T> (ARRAY / COMPACT_ARRAY),
// std::optional<std::vector<T>> (nullable array), nested structs with their own serde,
// std::optional<S> of such a struct (a nullable struct: an int8 -1 or 1, then the struct).
// An optional is nullable in every version it is present unless its field names the
// narrower range (Kafka's nullableVersions). In flexible versions every struct ends with a
// tagged-field section.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/wire.h"

namespace sluice::protocol {

struct versions {
    int16_t min = 0;
    int16_t max = INT16_MAX;
    constexpr bool has(int16_t v) const { return v >= min && v <= max; }
};
inline constexpr versions all_versions{};
constexpr versions since(int16_t v) { return {v, INT16_MAX}; }
constexpr versions range(int16_t lo, int16_t hi) { return {lo, hi}; }

// The versions in which an optional field may be null on the wire, when narrower than the
// versions it is present in. Outside them a null is written as the empty value ("" or an
// empty array), and a null read (which Kafka never sends there) becomes the empty value too,
// as for std::string and std::vector fields.
struct nullable_versions {
    versions vs;
};
constexpr nullable_versions nullable(versions vs) {
    return {vs};
}

namespace detail {
template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
// An optional nested struct: a tagged field (present or absent) or a nullable struct.
template <typename T>
struct is_optional_struct : std::false_type {};
template <typename T>
struct is_optional_struct<std::optional<T>>
    : std::bool_constant<std::is_class_v<T> && !std::is_same_v<T, std::string> &&
                         !is_vector<T>::value> {};
}  // namespace detail

class decoder {
public:
    decoder(reader& r, int16_t version, bool flexible)
        : _r(r), _version(version), _flexible(flexible) {}

    int16_t version() const { return _version; }
    bool flexible() const { return _flexible; }
    reader& in() { return _r; }

    template <typename T>
    void operator()(T& v, versions vs = all_versions) {
        if (vs.has(_version)) read(v);
    }

    template <typename T>
    void operator()(T& v, versions vs, nullable_versions nv) {
        static_assert(detail::is_optional<T>::value, "only an optional can be nullable");
        if (!vs.has(_version)) return;
        read(v);
        if (!v && !nv.vs.has(_version)) v.emplace();
    }

    template <typename T>
    void tagged(uint32_t tag, T& v, versions vs = all_versions) {
        if (!_flexible || !vs.has(_version) || _tags == nullptr) return;
        _tags->push_back({tag, [this, &v](reader& sub) {
                              decoder d(sub, _version, _flexible);
                              if constexpr (detail::is_optional_struct<T>::value) {
                                  v.emplace();
                                  d.read(*v);
                              } else {
                                  d.read(v);
                              }
                          }});
    }

    template <typename S>
    void read_struct(S& s) {
        std::vector<pending> tags;
        auto* outer = _tags;
        _tags = &tags;
        s.serde(*this);
        _tags = outer;
        if (_flexible) read_tag_section(tags);
    }

    template <typename T>
    void read(T& v) {
        if constexpr (std::is_same_v<T, bool>) {
            v = _r.boolean();
        } else if constexpr (std::is_same_v<T, int8_t>) {
            v = _r.i8();
        } else if constexpr (std::is_integral_v<T>) {
            v = _r.fixed<T>();
        } else if constexpr (std::is_same_v<T, double>) {
            v = _r.f64();
        } else if constexpr (std::is_same_v<T, uuid>) {
            v = _r.read_uuid();
        } else if constexpr (std::is_same_v<T, std::string>) {
            v = _r.nullable_string(_flexible).value_or(std::string{});
        } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
            v = _r.nullable_string(_flexible);
        } else if constexpr (std::is_same_v<T, bytes>) {
            v = _r.nullable_bytes(_flexible).value_or(bytes{});
        } else if constexpr (std::is_same_v<T, std::optional<bytes>>) {
            v = _r.nullable_bytes(_flexible);
        } else if constexpr (std::is_same_v<T, std::optional<bytes_view>>) {
            v = _r.nullable_bytes_view(_flexible);
        } else if constexpr (std::is_same_v<T, records>) {
            v.data = _r.nullable_bytes(_flexible);
        } else if constexpr (detail::is_vector<T>::value) {
            read_array(v);
        } else if constexpr (detail::is_optional_struct<T>::value) {
            // A nullable struct outside the tag section: an int8, -1 for null.
            if (_r.i8() < 0) {
                v.reset();
            } else {
                v.emplace();
                read_struct(*v);
            }
        } else if constexpr (detail::is_optional<T>::value) {
            int64_t n = _r.array_length(_flexible);
            if (n < 0) {
                v.reset();
            } else {
                v.emplace();
                fill_array(*v, n);
            }
        } else {
            read_struct(v);
        }
    }

private:
    struct pending {
        uint32_t tag;
        std::function<void(reader&)> read;
    };

    template <typename E>
    void read_array(std::vector<E>& v) {
        int64_t n = _r.array_length(_flexible);
        v.clear();
        if (n > 0) fill_array(v, n);
    }
    template <typename E>
    void fill_array(std::vector<E>& v, int64_t n) {
        v.reserve(static_cast<size_t>(n));
        for (int64_t i = 0; i < n && _r.ok(); ++i) read(v.emplace_back());
    }

    void read_tag_section(std::vector<pending>& known) {
        uint32_t count = _r.uvarint();
        for (uint32_t i = 0; i < count && _r.ok(); ++i) {
            uint32_t tag = _r.uvarint();
            uint32_t size = _r.uvarint();
            bytes_view data = _r.raw(size);
            if (!_r.ok()) return;
            for (auto& k : known) {
                if (k.tag != tag) continue;
                reader sub(data);
                k.read(sub);
                if (!sub.ok()) _r.fail();
            }
        }
    }

    reader& _r;
    int16_t _version;
    bool _flexible;
    std::vector<pending>* _tags = nullptr;
};

class encoder {
public:
    encoder(writer& w, int16_t version, bool flexible)
        : _w(w), _version(version), _flexible(flexible) {}

    int16_t version() const { return _version; }
    bool flexible() const { return _flexible; }

    template <typename T>
    void operator()(const T& v, versions vs = all_versions) {
        if (vs.has(_version)) write(v);
    }

    template <typename T>
    void operator()(const T& v, versions vs, nullable_versions nv) {
        static_assert(detail::is_optional<T>::value, "only an optional can be nullable");
        if (!vs.has(_version)) return;
        if (v || nv.vs.has(_version))
            write(v);
        else
            write(typename T::value_type{});
    }

    // A tagged field is written only when it holds something: an engaged optional, a
    // non-empty vector or string, a non-zero number.
    template <typename T>
    void tagged(uint32_t tag, const T& v, versions vs = all_versions) {
        if (!_flexible || !vs.has(_version) || _tags == nullptr) return;
        if (!present(v)) return;
        bytes buf;
        writer w(buf);
        encoder e(w, _version, _flexible);
        if constexpr (detail::is_optional_struct<T>::value)
            e.write(*v);
        else
            e.write(v);
        _tags->push_back({tag, std::move(buf)});
    }

    template <typename S>
    void write_struct(const S& s) {
        std::vector<std::pair<uint32_t, bytes>> tags;
        auto* outer = _tags;
        _tags = &tags;
        const_cast<S&>(s).serde(*this);  // serde only reads fields when encoding
        _tags = outer;
        if (_flexible) {
            std::sort(tags.begin(), tags.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
            _w.uvarint(tags.size());
            for (auto& [tag, data] : tags) {
                _w.uvarint(tag);
                _w.uvarint(data.size());
                _w.raw(data);
            }
        }
    }

    template <typename T>
    void write(const T& v) {
        if constexpr (std::is_same_v<T, bool>) {
            _w.boolean(v);
        } else if constexpr (std::is_same_v<T, int8_t>) {
            _w.i8(v);
        } else if constexpr (std::is_integral_v<T>) {
            _w.fixed<T>(v);
        } else if constexpr (std::is_same_v<T, double>) {
            _w.f64(v);
        } else if constexpr (std::is_same_v<T, uuid>) {
            _w.write_uuid(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
            _w.string(v, _flexible);
        } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
            _w.nullable_string(v, _flexible);
        } else if constexpr (std::is_same_v<T, bytes>) {
            _w.bytes_field(v, _flexible);
        } else if constexpr (std::is_same_v<T, std::optional<bytes>> ||
                             std::is_same_v<T, std::optional<bytes_view>>) {
            if (!v)
                _w.length(-1, _flexible, true);
            else
                _w.bytes_field(*v, _flexible);
        } else if constexpr (std::is_same_v<T, records>) {
            _w.records_field(v, _flexible);
        } else if constexpr (detail::is_vector<T>::value) {
            _w.length(static_cast<int64_t>(v.size()), _flexible, true);
            for (const auto& e : v) write(e);
        } else if constexpr (detail::is_optional_struct<T>::value) {
            _w.i8(v ? 1 : -1);
            if (v) write_struct(*v);
        } else if constexpr (detail::is_optional<T>::value) {
            if (!v) {
                _w.length(-1, _flexible, true);
            } else {
                _w.length(static_cast<int64_t>(v->size()), _flexible, true);
                for (const auto& e : *v) write(e);
            }
        } else {
            write_struct(v);
        }
    }

private:
    template <typename T>
    static bool present(const T& v) {
        if constexpr (detail::is_optional<T>::value) return v.has_value();
        else if constexpr (detail::is_vector<T>::value || std::is_same_v<T, std::string>)
            return !v.empty();
        else if constexpr (std::is_arithmetic_v<T>) return v != T{};
        else return true;
    }

    writer& _w;
    int16_t _version;
    bool _flexible;
    std::vector<std::pair<uint32_t, bytes>>* _tags = nullptr;
};

// The shape most requests and responses share: a topic name and its per-partition
// entries.
template <typename P>
struct topic_entries {
    std::string name;
    std::vector<P> partitions;
    template <typename F>
    void serde(F& f) {
        f(name);
        f(partitions);
    }
};

template <typename M>
bool decode_message(bytes_view data, int16_t version, bool flexible, M& out) {
    reader r(data);
    decoder d(r, version, flexible);
    d.read_struct(out);
    return r.ok();
}

template <typename M>
void encode_message(bytes& out, int16_t version, bool flexible, const M& m,
                    std::vector<splice>* splices = nullptr) {
    writer w(out, splices);
    encoder e(w, version, flexible);
    e.write_struct(m);
}

}  // namespace sluice::protocol
