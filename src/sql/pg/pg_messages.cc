#include "sql/pg/pg_messages.h"

#include <cstring>

namespace sluice::sql::pg {

namespace {

void put_be32(char* p, uint32_t v) {
    p[0] = static_cast<char>(v >> 24);
    p[1] = static_cast<char>(v >> 16);
    p[2] = static_cast<char>(v >> 8);
    p[3] = static_cast<char>(v);
}

}  // namespace

// ---- msg_reader ----

bool msg_reader::need(size_t n) {
    if (!_ok || _b.size() - _pos < n) {
        _ok = false;
        return false;
    }
    return true;
}

uint8_t msg_reader::u8() {
    if (!need(1)) return 0;
    return static_cast<uint8_t>(_b[_pos++]);
}

int16_t msg_reader::i16() {
    if (!need(2)) return 0;
    auto v = static_cast<uint16_t>((static_cast<uint8_t>(_b[_pos]) << 8) |
                                   static_cast<uint8_t>(_b[_pos + 1]));
    _pos += 2;
    return static_cast<int16_t>(v);
}

int32_t msg_reader::i32() {
    if (!need(4)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(_b[_pos + i]);
    _pos += 4;
    return static_cast<int32_t>(v);
}

std::string_view msg_reader::cstr() {
    if (!_ok) return {};
    auto nul = _b.find('\0', _pos);
    if (nul == std::string_view::npos) {
        _ok = false;
        return {};
    }
    auto s = _b.substr(_pos, nul - _pos);
    _pos = nul + 1;
    return s;
}

std::string_view msg_reader::raw(size_t n) {
    if (!need(n)) return {};
    auto s = _b.substr(_pos, n);
    _pos += n;
    return s;
}

// ---- Decoding ----

std::optional<startup_packet> decode_startup(std::string_view body) {
    msg_reader r(body);
    startup_packet p;
    int32_t code = r.i32();
    if (!r.ok()) return std::nullopt;
    if (code == ssl_request_code || code == gssenc_request_code) {
        if (!r.at_end()) return std::nullopt;
        p.what = code == ssl_request_code ? startup_packet::kind::ssl_request
                                          : startup_packet::kind::gssenc_request;
        return p;
    }
    if (code == cancel_request_code) {
        p.what = startup_packet::kind::cancel;
        p.cancel_pid = r.i32();
        p.cancel_secret = r.i32();
        if (!r.ok() || !r.at_end()) return std::nullopt;
        return p;
    }
    p.version = code;
    if ((code >> 16) != 3) {
        p.what = startup_packet::kind::unsupported_version;
        return p;
    }
    // Name/value pairs, then a lone NUL.
    for (;;) {
        auto name = r.cstr();
        if (!r.ok()) return std::nullopt;
        if (name.empty()) break;
        auto val = r.cstr();
        if (!r.ok()) return std::nullopt;
        p.params.emplace_back(std::string(name), std::string(val));
    }
    if (!r.at_end()) return std::nullopt;
    return p;
}

bool decode(std::string_view body, parse_msg& m) {
    msg_reader r(body);
    m.name = r.cstr();
    m.query = r.cstr();
    int16_t n = r.i16();
    if (n < 0) return false;
    m.param_oids.clear();
    for (int i = 0; i < n && r.ok(); ++i) m.param_oids.push_back(static_cast<uint32_t>(r.i32()));
    return r.ok() && r.at_end();
}

bool decode(std::string_view body, bind_msg& m) {
    msg_reader r(body);
    m.portal = r.cstr();
    m.statement = r.cstr();
    int16_t nf = r.i16();
    if (nf < 0) return false;
    m.param_formats.clear();
    for (int i = 0; i < nf && r.ok(); ++i) m.param_formats.push_back(r.i16());
    int16_t np = r.i16();
    if (np < 0) return false;
    m.params.clear();
    for (int i = 0; i < np && r.ok(); ++i) {
        int32_t len = r.i32();
        if (len == -1) {
            m.params.emplace_back(std::nullopt);
        } else if (len < 0) {
            return false;
        } else {
            m.params.emplace_back(r.raw(static_cast<size_t>(len)));
        }
    }
    int16_t nr = r.i16();
    if (nr < 0) return false;
    m.result_formats.clear();
    for (int i = 0; i < nr && r.ok(); ++i) m.result_formats.push_back(r.i16());
    return r.ok() && r.at_end();
}

bool decode(std::string_view body, describe_msg& m) {
    msg_reader r(body);
    m.what = static_cast<char>(r.u8());
    m.name = r.cstr();
    return r.ok() && r.at_end() && (m.what == 'S' || m.what == 'P');
}

bool decode(std::string_view body, execute_msg& m) {
    msg_reader r(body);
    m.portal = r.cstr();
    m.max_rows = r.i32();
    return r.ok() && r.at_end();
}

bool decode_query(std::string_view body, std::string_view& sql) {
    msg_reader r(body);
    sql = r.cstr();
    return r.ok() && r.at_end();
}

bool decode(std::string_view body, sasl_initial_msg& m) {
    msg_reader r(body);
    m.mechanism = r.cstr();
    const int32_t len = r.i32();
    m.data = len < 0 ? std::string_view{} : r.raw(static_cast<size_t>(len));
    return r.ok() && r.at_end() && len >= -1;
}

bool decode_password(std::string_view body, std::string_view& password) {
    msg_reader r(body);
    password = r.cstr();
    return r.ok() && r.at_end();
}

// ---- Encoding ----

msg_writer::msg_writer(std::string& out, char type) : _out(out) {
    _out.push_back(type);
    _start = _out.size();
    _out.append(4, '\0');
}

msg_writer::~msg_writer() {
    put_be32(_out.data() + _start, static_cast<uint32_t>(_out.size() - _start));
}

msg_writer& msg_writer::i16(int16_t v) {
    auto u = static_cast<uint16_t>(v);
    _out.push_back(static_cast<char>(u >> 8));
    _out.push_back(static_cast<char>(u));
    return *this;
}

msg_writer& msg_writer::i32(int32_t v) {
    char b[4];
    put_be32(b, static_cast<uint32_t>(v));
    _out.append(b, 4);
    return *this;
}

msg_writer& msg_writer::cstr(std::string_view s) {
    // A NUL inside would end the string early on the client's side: cut there.
    _out.append(s.substr(0, s.find('\0')));
    _out.push_back('\0');
    return *this;
}

msg_writer& msg_writer::raw(std::string_view s) {
    _out.append(s);
    return *this;
}

// Authentication request codes of the 'R' message.
namespace {
constexpr int32_t auth_ok = 0;
constexpr int32_t auth_cleartext_password = 3;
constexpr int32_t auth_sasl = 10;
constexpr int32_t auth_sasl_continue = 11;
constexpr int32_t auth_sasl_final = 12;
}  // namespace

void put_authentication_ok(std::string& out) {
    msg_writer(out, 'R').i32(auth_ok);
}

void put_authentication_cleartext_password(std::string& out) {
    msg_writer(out, 'R').i32(auth_cleartext_password);
}

void put_authentication_sasl(std::string& out, const std::vector<std::string_view>& mechanisms) {
    msg_writer w(out, 'R');
    w.i32(auth_sasl);
    for (auto m : mechanisms) w.cstr(m);
    w.raw(std::string_view("\0", 1));  // the list ends with an empty name
}

void put_authentication_sasl_continue(std::string& out, std::string_view data) {
    msg_writer(out, 'R').i32(auth_sasl_continue).raw(data);
}

void put_authentication_sasl_final(std::string& out, std::string_view data) {
    msg_writer(out, 'R').i32(auth_sasl_final).raw(data);
}

void put_parameter_status(std::string& out, std::string_view name, std::string_view value) {
    msg_writer(out, 'S').cstr(name).cstr(value);
}

void put_backend_key_data(std::string& out, int32_t pid, int32_t secret) {
    msg_writer(out, 'K').i32(pid).i32(secret);
}

void put_ready_for_query(std::string& out, char status) {
    msg_writer(out, 'Z').raw(std::string_view(&status, 1));
}

void put_negotiate_protocol_version(std::string& out, int32_t newest_minor,
                                    const std::vector<std::string>& unknown_options) {
    msg_writer w(out, 'v');
    w.i32(newest_minor).i32(static_cast<int32_t>(unknown_options.size()));
    for (const auto& o : unknown_options) w.cstr(o);
}

void put_row_description(std::string& out, const std::vector<field_desc>& fields) {
    msg_writer w(out, 'T');
    w.i16(static_cast<int16_t>(fields.size()));
    for (const auto& f : fields) {
        w.cstr(f.name);
        w.i32(0);  // table OID: none (SQLite tables have no PostgreSQL OIDs)
        w.i16(0);  // column attribute number
        w.i32(static_cast<int32_t>(f.type_oid));
        w.i16(f.type_size);
        w.i32(f.type_modifier);
        w.i16(f.format);
    }
}

void put_parameter_description(std::string& out, const std::vector<uint32_t>& oids) {
    msg_writer w(out, 't');
    w.i16(static_cast<int16_t>(oids.size()));
    for (uint32_t o : oids) w.i32(static_cast<int32_t>(o));
}

void put_command_complete(std::string& out, std::string_view tag) {
    msg_writer(out, 'C').cstr(tag);
}

namespace {
void put_error_fields(std::string& out, char type, const pg_error& e) {
    msg_writer w(out, type);
    w.raw("S").cstr(e.severity);
    w.raw("V").cstr(e.severity);  // the untranslated severity (protocol 3.0, PG >= 9.6)
    w.raw("C").cstr(e.sqlstate);
    w.raw("M").cstr(e.message);
    w.raw(std::string_view("\0", 1));
}
}  // namespace

void put_error(std::string& out, const pg_error& e) {
    put_error_fields(out, 'E', e);
}
void put_notice(std::string& out, const pg_error& e) {
    put_error_fields(out, 'N', e);
}

void put_empty(std::string& out, char type) {
    msg_writer w(out, type);
}

}  // namespace sluice::sql::pg
