#include "security/sasl.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

#include "common/ascii.h"

namespace sluice::security {

namespace {

using step_result = sasl_server::step_result;
using outcome = step_result::outcome;

constexpr std::array<std::string_view, 3> mechanisms = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};

// 24 random bytes are 32 base64 characters: printable, never ',' (RFC 5802 `printable`),
// and 192 bits, well above what a replay would need to guess.
constexpr size_t nonce_bytes = 24;
// Longest user name or message fragment quoted into a log line.
constexpr size_t max_logged = 128;

step_result fail(std::string reason) {
    return {outcome::failure, {}, std::move(reason)};
}

// For log lines: the name in quotes, control bytes escaped, long names cut, so that a
// client cannot forge or flood the broker log through its user name.
std::string log_quoted(std::string_view s) {
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < max_logged; ++i) {
        auto ch = static_cast<unsigned char>(s[i]);
        if (ch < 0x20 || ch == 0x7f) {
            constexpr std::string_view hex = "0123456789abcdef";
            out += "\\x";
            out += hex[ch >> 4];
            out += hex[ch & 0xf];
        } else {
            out += static_cast<char>(ch);
        }
    }
    if (s.size() > max_logged) out += "...";
    out += '\'';
    return out;
}

std::vector<std::string_view> split_attrs(std::string_view s) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (true) {
        size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}

// The value of "k=value" when attr has that key.
std::optional<std::string_view> attr_value(std::string_view attr, char key) {
    if (attr.size() < 2 || attr[0] != key || attr[1] != '=') return std::nullopt;
    return attr.substr(2);
}

// RFC 5802 saslname: ',' travels as "=2C" and '=' as "=3D"; no other '=' may appear.
std::optional<std::string> decode_saslname(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '=') {
            out += s[i];
        } else if (s.substr(i, 3) == "=2C") {
            out += ',';
            i += 2;
        } else if (s.substr(i, 3) == "=3D") {
            out += '=';
            i += 2;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

std::string encode_saslname(std::string_view s) {
    std::string out;
    for (char ch : s) {
        if (ch == ',')
            out += "=2C";
        else if (ch == '=')
            out += "=3D";
        else
            out += ch;
    }
    return out;
}

// RFC 5802 `printable`: %x21-2B / %x2D-7E.
bool printable_nonce(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(),
                                     [](char ch) { return ch >= 0x21 && ch <= 0x7e && ch != ','; });
}

std::string make_nonce() {
    return base64_encode(random_bytes(nonce_bytes));
}

std::string xor_bytes(std::string_view a, std::string_view b) {
    std::string out(a);
    for (size_t i = 0; i < out.size() && i < b.size(); ++i) out[i] = char(out[i] ^ b[i]);
    return out;
}

size_t digest_size(scram_mechanism m) {
    return m == scram_mechanism::sha512 ? 64 : 32;
}

// A stand-in for a user without a credential of this mechanism: its salt depends only on
// the name and a per-process secret, so repeated attempts see a stable salt, as they
// would for a real user, and probing cannot tell the two apart before the proof.
scram_credential fake_credential(scram_mechanism m, const std::string& user) {
    static const std::string secret = random_bytes(32);
    std::string tag(mechanism_name(m));
    tag += '\0';
    tag += user;
    scram_credential c;
    c.mechanism = m;
    c.iterations = default_iterations;
    c.salt = scram_hmac(scram_mechanism::sha256, secret, "salt:" + tag);
    c.stored_key = scram_hmac(m, secret, "stored:" + tag);
    c.server_key = scram_hmac(m, secret, "server:" + tag);
    return c;
}

}  // namespace

std::string check_password(const credential_source& source, const std::string& user,
                           std::string_view password) {
    auto creds = source.credentials(user);
    if (creds.empty()) {
        // Spend the same PBKDF2 work as for a real user, so timing does not tell.
        (void)verify_password(fake_credential(scram_mechanism::sha256, user), password);
        return "unknown user " + log_quoted(user);
    }
    bool ok = false;
    for (const auto& c : creds) ok = verify_password(c, password) || ok;
    return ok ? std::string() : "wrong password for user " + log_quoted(user);
}

namespace {

// RFC 4616: [authzid] NUL authcid NUL passwd.
class plain_server final : public sasl_server {
  public:
    explicit plain_server(const credential_source& source) : _source(source) {}

    step_result step(std::string_view msg) override {
        if (_done) return fail("SASL/PLAIN exchange already finished");
        _done = true;
        size_t first = msg.find('\0');
        size_t second = first == msg.npos ? msg.npos : msg.find('\0', first + 1);
        if (second == msg.npos)
            return fail("malformed PLAIN message: expected authzid NUL user NUL password");
        std::string_view authzid = msg.substr(0, first);
        std::string user(msg.substr(first + 1, second - first - 1));
        std::string_view password = msg.substr(second + 1);
        if (password.find('\0') != password.npos)
            return fail("malformed PLAIN message: more than two NUL separators");
        if (user.empty()) return fail("malformed PLAIN message: empty user name");
        if (!authzid.empty() && authzid != user)
            return fail("authorization id " + log_quoted(authzid) + " differs from user " +
                        log_quoted(user));
        if (auto why = check_password(_source, user, password); !why.empty()) return fail(why);
        _user = std::move(user);
        return {outcome::success, {}, {}};
    }

    const std::string& user() const override { return _user; }

  private:
    const credential_source& _source;
    bool _done = false;
    std::string _user;
};

// RFC 5802 section 5, server side. Without channel binding (no -PLUS mechanisms).
class scram_server final : public sasl_server {
  public:
    scram_server(scram_mechanism m, const credential_source& source, std::string default_user)
        : _mech(m), _source(source), _default_user(std::move(default_user)) {}

    step_result step(std::string_view msg) override {
        state s = _state;
        _state = state::done;  // any failure ends the exchange
        switch (s) {
            case state::first:
                return on_first(msg);
            case state::final:
                return on_final(msg);
            case state::done:
                break;
        }
        return fail(std::string(mechanism_name(_mech)) + " exchange already finished");
    }

    const std::string& user() const override { return _user; }

  private:
    enum class state : uint8_t { first, final, done };

    static step_result malformed_first(std::string_view why) {
        return fail("malformed client-first message: " + std::string(why));
    }
    static step_result malformed_final(std::string_view why) {
        return fail("malformed client-final message: " + std::string(why));
    }

    step_result on_first(std::string_view msg);
    step_result on_final(std::string_view msg);

    scram_mechanism _mech;
    const credential_source& _source;
    std::string _default_user;
    state _state = state::first;
    std::string _user;     // set once authenticated
    std::string _claimed;  // the name client-first asked for
    bool _known = false;   // whether _cred is real rather than fake_credential()
    // The mechanisms the claimed user has credentials for when this one is missing: a
    // user who exists is not "unknown" in the log.
    std::string _user_has;
    scram_credential _cred;
    std::string _gs2_header, _client_first_bare, _server_first, _nonce, _client_nonce;
};

step_result scram_server::on_first(std::string_view msg) {
    if (msg.find('\0') != msg.npos) return malformed_first("NUL byte");
    // gs2-header = gs2-cbind-flag "," [ authzid ] ","
    size_t c1 = msg.find(',');
    size_t c2 = c1 == msg.npos ? msg.npos : msg.find(',', c1 + 1);
    if (c2 == msg.npos) return malformed_first("no GS2 header");
    std::string_view cbind = msg.substr(0, c1);
    if (cbind.starts_with("p="))
        return fail("channel binding " + log_quoted(cbind.substr(2)) + " is not supported");
    if (cbind != "n" && cbind != "y")
        return malformed_first("channel binding flag " + log_quoted(cbind) + " is not n, y or p=");
    std::optional<std::string> authzid;
    if (std::string_view a = msg.substr(c1 + 1, c2 - c1 - 1); !a.empty()) {
        auto v = attr_value(a, 'a');
        if (!v) return malformed_first("expected a=<authzid> in the GS2 header");
        authzid = decode_saslname(*v);
        if (!authzid) return malformed_first("bad '=' escape in the authorization id");
    }
    _gs2_header = std::string(msg.substr(0, c2 + 1));
    std::string_view bare = msg.substr(c2 + 1);

    auto attrs = split_attrs(bare);
    if (attr_value(attrs[0], 'm')) return fail("mandatory SCRAM extension (m=) not supported");
    auto n = attr_value(attrs[0], 'n');
    if (!n) return malformed_first("expected n=<user> after the GS2 header");
    auto name = decode_saslname(*n);
    if (!name) return malformed_first("bad '=' escape in the user name");
    auto cnonce = attrs.size() > 1 ? attr_value(attrs[1], 'r') : std::nullopt;
    if (!cnonce) return malformed_first("expected r=<nonce> after the user name");
    if (!printable_nonce(*cnonce)) return malformed_first("empty or unprintable nonce");
    // Kafka's extensions follow the nonce as key=value; only delegation tokens matter.
    for (size_t i = 2; i < attrs.size(); ++i) {
        size_t eq = attrs[i].find('=');
        if (eq == 0 || eq == attrs[i].npos)
            return malformed_first("extension " + log_quoted(attrs[i]) + " is not key=value");
        std::string_view key = attrs[i].substr(0, eq);
        if (key == "tokenauth" && iequals(attrs[i].substr(eq + 1), "true"))
            return fail("delegation tokens are not supported");
    }
    if (name->empty()) *name = _default_user;
    if (name->empty()) return malformed_first("empty user name");
    if (authzid && *authzid != *name)
        return fail("authorization id " + log_quoted(*authzid) + " differs from user " +
                    log_quoted(*name));

    auto creds = _source.credentials(*name);
    auto it = std::find_if(creds.begin(), creds.end(),
                           [&](const scram_credential& c) { return c.mechanism == _mech; });
    _known = it != creds.end();
    if (!_known)
        for (const auto& c : creds)
            _user_has += (_user_has.empty() ? "" : ", ") + std::string(mechanism_name(c.mechanism));
    _cred = _known ? std::move(*it) : fake_credential(_mech, *name);
    _claimed = std::move(*name);
    _client_nonce = std::string(*cnonce);
    _nonce = _client_nonce + make_nonce();
    _server_first = "r=" + _nonce + ",s=" + base64_encode(_cred.salt) +
                    ",i=" + std::to_string(_cred.iterations);
    _client_first_bare = std::string(bare);
    _state = state::final;
    return {outcome::challenge, _server_first, {}};
}

step_result scram_server::on_final(std::string_view msg) {
    // client-final = c=<gs2 header b64>,r=<nonce>[,extensions],p=<proof b64>
    size_t p = msg.rfind(",p=");
    if (p == msg.npos) return malformed_final("no p=<proof>");
    std::string_view without_proof = msg.substr(0, p);
    auto attrs = split_attrs(without_proof);
    auto c = attr_value(attrs[0], 'c');
    auto r = attrs.size() > 1 ? attr_value(attrs[1], 'r') : std::nullopt;
    if (!c || !r) return malformed_final("expected c=<binding>,r=<nonce>");
    auto binding = base64_decode(*c);
    if (!binding) return malformed_final("c= is not base64");
    if (*binding != _gs2_header)
        return fail("channel binding data " + log_quoted(*binding) +
                    " differs from the client-first GS2 header " + log_quoted(_gs2_header));
    // librdkafka (2.0 at least) echoes its own nonce in front of the whole server nonce;
    // Kafka accepts that (it checks that the nonce ends with the server's), so do we.
    if (*r != _nonce && *r != _client_nonce + _nonce)
        return fail("nonce mismatch for user " + log_quoted(_claimed));
    auto proof = base64_decode(msg.substr(p + 3));
    if (!proof) return malformed_final("p= is not base64");
    if (proof->size() != digest_size(_mech))
        return malformed_final("proof has " + std::to_string(proof->size()) + " bytes, expected " +
                               std::to_string(digest_size(_mech)));

    std::string auth_message = _client_first_bare;
    auth_message += ',';
    auth_message += _server_first;
    auth_message += ',';
    auth_message += without_proof;
    std::string signature = scram_hmac(_mech, _cred.stored_key, auth_message);
    std::string client_key = xor_bytes(*proof, signature);
    bool match = constant_time_equal(scram_hash(_mech, client_key), _cred.stored_key);
    if (!_known && _user_has.empty())
        return fail("unknown user " + log_quoted(_claimed) + " for " +
                    std::string(mechanism_name(_mech)));
    if (!_known)
        return fail("user " + log_quoted(_claimed) + " has no " +
                    std::string(mechanism_name(_mech)) + " credential (it has " + _user_has +
                    ")");
    if (!match) return fail("wrong password for user " + log_quoted(_claimed));
    _user = _claimed;
    return {outcome::success,
            "v=" + base64_encode(scram_hmac(_mech, _cred.server_key, auth_message)),
            {}};
}

}  // namespace

std::span<const std::string_view> supported_mechanisms() {
    return mechanisms;
}

std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism,
                                              const credential_source& source,
                                              std::string default_user) {
    if (mechanism == "PLAIN") return std::make_unique<plain_server>(source);
    if (auto m = parse_scram_mechanism(mechanism))
        return std::make_unique<scram_server>(*m, source, std::move(default_user));
    return nullptr;
}

scram_client::scram_client(scram_mechanism m, std::string user, std::string password)
    : scram_client(m, std::move(user), std::move(password), make_nonce()) {}

scram_client::scram_client(scram_mechanism m, std::string user, std::string password,
                           std::string nonce)
    : _mech(m), _user(std::move(user)), _password(std::move(password)), _nonce(std::move(nonce)) {}

std::string scram_client::client_first() {
    _client_first_bare = "n=" + encode_saslname(_user) + ",r=" + _nonce;
    return "n,," + _client_first_bare;
}

std::string scram_client::client_final(std::string_view server_first) {
    _auth_message.clear();
    _server_key.clear();
    if (_client_first_bare.empty()) return {};
    auto attrs = split_attrs(server_first);
    if (attrs.size() < 3) return {};
    auto r = attr_value(attrs[0], 'r');
    auto s = attr_value(attrs[1], 's');
    auto i = attr_value(attrs[2], 'i');
    if (!r || !s || !i) return {};
    // The server extends our nonce; anything else is a replay or a confused server.
    if (!r->starts_with(_nonce) || r->size() == _nonce.size() || !printable_nonce(*r)) return {};
    auto salt = base64_decode(*s);
    int32_t iterations = 0;
    auto [end, ec] = std::from_chars(i->data(), i->data() + i->size(), iterations);
    if (!salt || ec != std::errc() || end != i->data() + i->size()) return {};
    // Kafka's bounds: below is weak, above lets a rogue server burn our CPU.
    if (iterations < min_iterations || iterations > max_iterations) return {};

    std::string salted = scram_salted_password(_mech, _password, *salt, iterations);
    std::string client_key = scram_hmac(_mech, salted, "Client Key");
    std::string stored_key = scram_hash(_mech, client_key);
    std::string without_proof = "c=" + base64_encode("n,,") + ",r=" + std::string(*r);
    _auth_message = _client_first_bare + "," + std::string(server_first) + "," + without_proof;
    _server_key = scram_hmac(_mech, salted, "Server Key");
    std::string proof = xor_bytes(client_key, scram_hmac(_mech, stored_key, _auth_message));
    return without_proof + ",p=" + base64_encode(proof);
}

bool scram_client::verify_server_final(std::string_view server_final) const {
    if (_auth_message.empty()) return false;
    auto v = attr_value(split_attrs(server_final)[0], 'v');  // "e=..." is a server error
    if (!v) return false;
    auto signature = base64_decode(*v);
    return signature &&
           constant_time_equal(*signature, scram_hmac(_mech, _server_key, _auth_message));
}

}  // namespace sluice::security
