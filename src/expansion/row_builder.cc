#include "expansion/row_builder.h"

#include <cmath>
#include <limits>

#include "sql/json_text.h"
#include "sql/time_text.h"

namespace sluice::expansion {
namespace {

using simdjson::dom::element_type;

using sql::days_from_civil;

bool digits(std::string_view s, size_t at, size_t n, int& out) {
    if (at + n > s.size()) return false;
    out = 0;
    for (size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

}  // namespace

std::optional<int64_t> parse_rfc3339_ms(std::string_view s) {
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) ||
        s[7] != '-' || !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
        !digits(s, 17, 2, sec))
        return std::nullopt;
    static constexpr int month_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > month_days[mo - 1] || h > 23 || mi > 59 || sec > 60)
        return std::nullopt;
    size_t at = 19;
    int64_t ms = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        int64_t scale = 100;
        size_t n = 0;
        for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, ++n) {
            ms += (s[at] - '0') * scale;
            scale /= 10;
        }
        if (n == 0) return std::nullopt;
    }
    int64_t offset_min = 0;
    if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
        ++at;
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        int oh = 0, om = 0;
        if (!digits(s, at + 1, 2, oh) || at + 3 >= s.size() || s[at + 3] != ':' ||
            !digits(s, at + 4, 2, om) || oh > 23 || om > 59)
            return std::nullopt;
        offset_min = (s[at] == '-' ? -1 : 1) * (oh * 60 + om);
        at += 6;
    } else {
        return std::nullopt;
    }
    if (at != s.size()) return std::nullopt;
    const int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
    const int64_t secs = days * 86400 + h * 3600 + mi * 60 + std::min(sec, 59) - offset_min * 60;
    return secs * 1000 + ms;
}

std::vector<row_builder::node> row_builder::make_nodes(const std::vector<field>& fields,
                                                       bool flatten, bool stored,
                                                       int& next_column) {
    std::vector<node> out;
    out.reserve(fields.size());
    for (const auto& f : fields) {
        node n;
        n.name = f.name;
        n.type = f.type;
        const bool flat_struct = flatten && f.type == field_type::structure;
        if (stored && !flat_struct) n.column = next_column++;
        if (f.type == field_type::structure)
            n.children = make_nodes(f.fields, flatten, stored && flat_struct, next_column);
        out.push_back(std::move(n));
    }
    return out;
}

row_builder::row_builder(const schema& s, const layout& l) {
    int next = 0;
    _root = make_nodes(s.fields, l.flatten(), true, next);
    _row.fields.resize(l.field_count());
    _scratch.resize(l.field_count());
    _json.resize(l.field_count());
}

void row_builder::walk_object(simdjson::dom::object obj, std::vector<node>& nodes) {
    // Events of one topic mostly list their keys in the same order: look first where the
    // previous key's successor is.
    size_t hint = 0;
    for (auto [key, value] : obj) {
        node* match = nullptr;
        if (hint < nodes.size() && nodes[hint].name == key) {
            match = &nodes[hint++];
        } else {
            for (size_t i = 0; i < nodes.size(); ++i)
                if (nodes[i].name == key) {
                    match = &nodes[i];
                    hint = i + 1;
                    break;
                }
        }
        if (!match) {
            ++_row.excess;
            continue;
        }
        if (match->seen == _generation) continue;  // a duplicate key: the first one counts
        match->seen = _generation;
        set_value(*match, value);
    }
    for (const auto& n : nodes)
        if (n.seen != _generation) ++_row.missing;
}

void row_builder::set_value(node& n, simdjson::dom::element v) {
    const element_type t = v.type();
    if (t == element_type::NULL_VALUE) return;  // present, and NULL
    cell* c = n.column >= 0 ? &_row.fields[static_cast<size_t>(n.column)] : nullptr;
    auto mismatch = [&] {
        ++_row.type_errors;
        if (c) c->k = cell::kind::null;
    };
    auto integer = [&](int64_t i) {
        if (c) {
            c->k = cell::kind::integer;
            c->i = i;
        }
    };
    switch (n.type) {
        case field_type::int64:
        case field_type::timestamp_ms: {
            if (t == element_type::INT64) return integer(v.get_int64().value_unsafe());
            if (t == element_type::UINT64) return mismatch();  // above INT64_MAX
            if (t == element_type::DOUBLE) {
                const double d = v.get_double().value_unsafe();
                // Integral values in int64's range (2^63 itself is not).
                if (std::trunc(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
                    return integer(static_cast<int64_t>(d));
                return mismatch();
            }
            if (t == element_type::STRING && n.type == field_type::timestamp_ms) {
                if (auto ms = parse_rfc3339_ms(v.get_string().value_unsafe())) return integer(*ms);
            }
            return mismatch();
        }
        case field_type::float64:
            if (t != element_type::INT64 && t != element_type::UINT64 && t != element_type::DOUBLE)
                return mismatch();
            if (c) {
                c->k = cell::kind::real;
                c->d = v.get_double().value_unsafe();
                if (t == element_type::INT64)
                    c->d = static_cast<double>(v.get_int64().value_unsafe());
                else if (t == element_type::UINT64)
                    c->d = static_cast<double>(v.get_uint64().value_unsafe());
            }
            return;
        case field_type::boolean:
            if (t != element_type::BOOL) return mismatch();
            return integer(v.get_bool().value_unsafe() ? 1 : 0);
        case field_type::string:
            if (t != element_type::STRING) return mismatch();
            if (c) {
                c->k = cell::kind::text;
                c->s = v.get_string().value_unsafe();
            }
            return;
        case field_type::binary: {
            if (t != element_type::STRING) return mismatch();
            auto decoded = sql::base64_decode(v.get_string().value_unsafe());
            if (!decoded) return mismatch();
            if (c) {
                scratch(n.column) = std::move(*decoded);
                c->k = cell::kind::blob;
                c->s = scratch(n.column);
            }
            return;
        }
        case field_type::json:
            if (c) {
                c->k = cell::kind::text;
                c->s = minified(n.column, v);
            }
            return;
        case field_type::structure:
            if (t != element_type::OBJECT) return mismatch();
            if (c) {  // kept whole, as JSON text
                c->k = cell::kind::text;
                c->s = minified(n.column, v);
            }
            walk_object(v.get_object().value_unsafe(), n.children);
            return;
    }
}

std::string_view row_builder::minified(int column, simdjson::dom::element v) {
    // One builder per column, reused: its buffer keeps its capacity from row to row.
    auto& b = _json[static_cast<size_t>(column)];
    b.clear();
    b.append(v);
    return b.str();
}

const expanded_row& row_builder::build(std::optional<bytes_view> source) {
    for (auto& c : _row.fields) c.k = cell::kind::null;
    _row.missing = _row.excess = _row.type_errors = 0;
    _row.parse_error = false;
    if (!source) return _row;
    ++_generation;
    simdjson::dom::element doc;
    if (_parser.parse(reinterpret_cast<const char*>(source->data()), source->size()).get(doc) ||
        doc.type() != element_type::OBJECT) {
        _row.parse_error = true;
        return _row;
    }
    walk_object(doc.get_object().value_unsafe(), _root);
    return _row;
}

}  // namespace sluice::expansion
