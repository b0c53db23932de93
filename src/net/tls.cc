#include "net/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/types.h"
#include "net/raw_buffer.h"

namespace sluice::net {
namespace {

// TLS 1.2 suites with forward secrecy and AEAD only.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

constexpr const char* tls13_ciphers =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// OpenSSL reads ahead into a buffer of this size, so that one recv() can bring in
// several 16 KiB records instead of one syscall per record header and body.
constexpr size_t read_ahead_bytes = 64 * 1024;

// The reason of the oldest queued OpenSSL error (the most specific one), and clears
// the queue.
std::string openssl_reason() {
    unsigned long e = ERR_peek_error();
    ERR_clear_error();
    if (e == 0) return "unknown error";
    const char* r = ERR_reason_error_string(e);
    if (r != nullptr) return r;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

// Fails early with the system's words when the file itself cannot be opened, so that
// "No such file or directory" is not lost in OpenSSL's wording.
result<void> check_readable(const std::string& path, const char* what) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr)
        return {errc::invalid_config,
                std::string("cannot read ") + what + " " + path + ": " + std::strerror(errno)};
    std::fclose(f);
    return {};
}

// Keys must be stored unencrypted: a server cannot stop to ask for a passphrase.
// Without this callback OpenSSL would prompt on the terminal.
int refuse_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* asked) {
    *static_cast<bool*>(asked) = true;
    return 0;
}

bool is_ip_address(const std::string& s) {
    in6_addr a6{};
    in_addr a4{};
    return inet_pton(AF_INET, s.c_str(), &a4) == 1 || inet_pton(AF_INET6, s.c_str(), &a6) == 1;
}

std::optional<std::string> verified_common_name(const SSL* ssl) {
    X509* cert = SSL_get0_peer_certificate(ssl);
    if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
    X509_NAME* name = X509_get_subject_name(cert);
    // The most specific CN is the last one.
    int idx = -1;
    for (int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(name, NID_commonName, i))
        idx = i;
    if (idx < 0) return std::nullopt;
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)));
    if (len < 0) return std::nullopt;
    std::string cn(reinterpret_cast<const char*>(utf8), static_cast<size_t>(len));
    OPENSSL_free(utf8);
    return cn;
}

bool retryable(int err) {
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

}  // namespace

// --- a socket BIO of our own ------------------------------------------------------------
// OpenSSL's socket BIO writes with write(2), which kills the process with SIGPIPE when
// the peer has gone (send(MSG_NOSIGNAL) returns EPIPE instead), and sends each 16 KiB
// record with its own syscall. While tls_session::write runs, ours collects the records
// and the session sends them together afterwards.
struct tls_session::socket_state {
    int fd = -1;
    bool collect = false;  // inside tls_session::write
    raw_buffer out;        // records not yet sent; at most one write's worth
    size_t out_pos = 0;

    // Sends collected records; 0 when none remain, else the errno that stopped it.
    int send_collected() {
        while (out_pos < out.size()) {
            ssize_t n = ::send(fd, out.data() + out_pos, out.size() - out_pos, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno;
            }
            out_pos += static_cast<size_t>(n);
        }
        out.clear();
        out_pos = 0;
        return 0;
    }
};

namespace {

using socket_state = tls_session::socket_state;

socket_state& state_of(BIO* b) {
    return *static_cast<socket_state*>(BIO_get_data(b));
}
int fd_of(BIO* b) {
    return state_of(b).fd;
}

int bio_write(BIO* b, const char* data, int len) {
    BIO_clear_retry_flags(b);
    auto& st = state_of(b);
    if (st.collect) {
        // resize and memcpy: inserting a char range into a vector of uint8_t copied
        // byte by byte, and took a third of the broker's CPU on a TLS consume.
        const size_t at = st.out.size();
        st.out.resize(at + static_cast<size_t>(len));
        std::memcpy(st.out.data() + at, data, static_cast<size_t>(len));
        return len;
    }
    // Anything else (handshake, alerts) goes out after the records collected before.
    if (int err = st.send_collected(); err != 0) {
        if (retryable(err)) BIO_set_retry_write(b);
        errno = err;
        return -1;
    }
    ssize_t n = ::send(st.fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
    if (n < 0 && retryable(errno)) BIO_set_retry_write(b);
    return static_cast<int>(n);
}

int bio_read(BIO* b, char* out, int len) {
    BIO_clear_retry_flags(b);
    ssize_t n = ::recv(fd_of(b), out, static_cast<size_t>(len), 0);
    if (n < 0 && retryable(errno)) BIO_set_retry_read(b);
    if (n == 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF);  // lets OpenSSL name an unexpected EOF
    return static_cast<int>(n);
}

int bio_puts(BIO* b, const char* s) {
    return bio_write(b, s, static_cast<int>(std::strlen(s)));
}

long bio_ctrl(BIO* b, int cmd, long /*num*/, void* ptr) {
    switch (cmd) {
        case BIO_CTRL_FLUSH:
            return 1;  // writes are unbuffered
        case BIO_CTRL_EOF:
            return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
        case BIO_C_GET_FD:
            if (ptr != nullptr) *static_cast<int*>(ptr) = fd_of(b);
            return fd_of(b);
        default:
            return 0;
    }
}

int bio_create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
}

const BIO_METHOD* socket_bio_method() {
    static BIO_METHOD* method = [] {
        BIO_METHOD* m = BIO_meth_new(
            BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "sluice socket");
        if (m == nullptr) return m;
        BIO_meth_set_write(m, bio_write);
        BIO_meth_set_read(m, bio_read);
        BIO_meth_set_puts(m, bio_puts);
        BIO_meth_set_ctrl(m, bio_ctrl);
        BIO_meth_set_create(m, bio_create);
        return m;
    }();
    return method;
}

// Binds `ssl` to the socket through our BIO.
bool attach_socket(SSL* ssl, socket_state& st) {
    const BIO_METHOD* m = socket_bio_method();
    BIO* bio = m == nullptr ? nullptr : BIO_new(m);
    if (bio == nullptr) return false;
    BIO_set_data(bio, &st);
    SSL_set_bio(ssl, bio, bio);  // one reference, owned by ssl from now on
    return true;
}

}  // namespace

// --- tls_context ------------------------------------------------------------------------

bool tls_context::file_stamp::operator==(const file_stamp& o) const {
    return dev == o.dev && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
}

std::vector<tls_context::file_stamp> tls_context::stamp_files() const {
    std::vector<file_stamp> out;
    for (const std::string* p :
         {&_settings.cert_file, &_settings.key_file, &_settings.client_ca_file}) {
        file_stamp fs;
        struct stat st {};
        if (!p->empty() && ::stat(p->c_str(), &st) == 0) {
            fs.dev = st.st_dev;
            fs.ino = st.st_ino;
            fs.mtime = st.st_mtim;
            fs.size = st.st_size;
        }
        out.push_back(fs);
    }
    return out;
}

result<ssl_ctx_st*> tls_context::build() const {
    SSL_CTX* ctx = SSL_CTX_new(_server ? TLS_server_method() : TLS_client_method());
    if (ctx == nullptr) return {errc::io_error, "cannot create a TLS context: " + openssl_reason()};
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> guard(ctx, SSL_CTX_free);
    const auto& s = _settings;

    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(
        ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1)
        return {errc::io_error, "no usable TLS 1.2 cipher suite: " + openssl_reason()};
    // OpenSSL's TLS 1.3 defaults, with AES-128-GCM first: as safe, and cheaper per byte
    // than AES-256 where AES instructions exist (the server's order wins).
    if (SSL_CTX_set_ciphersuites(ctx, tls13_ciphers) != 1)
        return {errc::io_error, "no usable TLS 1.3 cipher suite: " + openssl_reason()};
    // The connection retries a blocked write from a buffer that may move, and takes
    // partial progress rather than waiting for a whole large write.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, read_ahead_bytes);

    if (_server && (s.cert_file.empty() || s.key_file.empty()))
        return {errc::invalid_config, "a TLS server needs a certificate file and a key file"};
    if (s.cert_file.empty() != s.key_file.empty())
        return {errc::invalid_config,
                "a client certificate needs both a certificate and a key file"};
    if (!s.cert_file.empty()) {
        if (auto r = check_readable(s.cert_file, "certificate"); !r) return r.err();
        if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1)
            return {errc::invalid_config,
                    "cannot read certificate " + s.cert_file + ": " + openssl_reason()};
        if (auto r = check_readable(s.key_file, "key"); !r) return r.err();
        bool asked = false;
        SSL_CTX_set_default_passwd_cb(ctx, refuse_passphrase);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, &asked);
        int ok = SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
        // OpenSSL compares the key with the certificate as it loads it.
        const bool mismatch = ok != 1 && ERR_GET_LIB(ERR_peek_last_error()) == ERR_LIB_X509 &&
                              ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
        if (ok != 1 && !mismatch) {
            std::string why =
                asked ? "it is encrypted; store it without a passphrase" : openssl_reason();
            return {errc::invalid_config, "cannot read key " + s.key_file + ": " + why};
        }
        if (mismatch || SSL_CTX_check_private_key(ctx) != 1) {
            ERR_clear_error();
            return {errc::invalid_config,
                    "key " + s.key_file + " does not match certificate " + s.cert_file};
        }
    }

    using mode = tls_settings::client_auth_mode;
    if (_server) {
        // Sessions resumed from a ticket keep the client identity; OpenSSL refuses to
        // resume with client verification unless a session id context is set.
        static constexpr unsigned char sid_ctx[] = "sluice";
        SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
        if (s.client_auth != mode::none) {
            if (s.client_ca_file.empty())
                return {errc::invalid_config, "client authentication needs a client CA file"};
            if (auto r = check_readable(s.client_ca_file, "client CA file"); !r) return r.err();
            if (SSL_CTX_load_verify_locations(ctx, s.client_ca_file.c_str(), nullptr) != 1)
                return {errc::invalid_config,
                        "cannot read client CA file " + s.client_ca_file + ": " + openssl_reason()};
            // Tells clients which CAs we accept, so they pick the right certificate.
            STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.client_ca_file.c_str());
            if (names == nullptr)
                return {errc::invalid_config,
                        "no CA certificate in client CA file " + s.client_ca_file};
            SSL_CTX_set_client_CA_list(ctx, names);
            int verify = SSL_VERIFY_PEER;
            if (s.client_auth == mode::required) verify |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
            SSL_CTX_set_verify(ctx, verify, nullptr);
        }
    } else {
        const std::string& ca = s.client_ca_file;  // for a client: the server's CA
        if (ca.empty()) {
            if (SSL_CTX_set_default_verify_paths(ctx) != 1)
                return {errc::invalid_config,
                        "cannot load the system CA store: " + openssl_reason()};
        } else {
            if (auto r = check_readable(ca, "CA file"); !r) return r.err();
            if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1)
                return {errc::invalid_config,
                        "cannot read CA file " + ca + ": " + openssl_reason()};
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    }
    return guard.release();
}

result<std::shared_ptr<tls_context>> tls_context::create_server(const tls_settings& s) {
    std::shared_ptr<tls_context> c(new tls_context(true, s));
    if (auto r = c->reload(); !r) return r.err();
    return c;
}

result<std::shared_ptr<tls_context>> tls_context::create_client(std::string ca_file,
                                                                std::string cert_file,
                                                                std::string key_file) {
    tls_settings s;
    s.cert_file = std::move(cert_file);
    s.key_file = std::move(key_file);
    s.client_ca_file = std::move(ca_file);
    std::shared_ptr<tls_context> c(new tls_context(false, std::move(s)));
    if (auto r = c->reload(); !r) return r.err();
    return c;
}

tls_context::~tls_context() {
    SSL_CTX_free(_ctx);
}

result<void> tls_context::reload() {
    // Stamped before reading: a file replaced mid-read differs at the next check.
    auto stamps = stamp_files();
    auto built = build();
    SSL_CTX* old = nullptr;
    {
        std::lock_guard lk(_mu);
        _stamps = std::move(stamps);  // a failed attempt is not retried until a file changes
        if (!built) return built.err();
        old = _ctx;
        _ctx = *built;
    }
    SSL_CTX_free(old);  // open sessions hold their own reference
    return {};
}

result<bool> tls_context::reload_if_changed() {
    auto now = stamp_files();
    {
        std::lock_guard lk(_mu);
        if (now == _stamps) return false;
    }
    if (auto r = reload(); !r) return r.err();
    return true;
}

ssl_st* tls_context::new_ssl() const {
    std::lock_guard lk(_mu);
    return SSL_new(_ctx);
}

// --- tls_session ------------------------------------------------------------------------

result<std::unique_ptr<tls_session>> tls_session::accept(const tls_context& ctx, int fd) {
    if (!ctx.is_server())
        return {errc::invalid_argument, "a client TLS context cannot accept connections"};
    auto s = open(ctx, fd, true);
    if (s) SSL_set_accept_state((*s)->_ssl);
    return s;
}

result<std::unique_ptr<tls_session>> tls_session::connect(const tls_context& ctx, int fd,
                                                          const std::string& server_name) {
    if (ctx.is_server())
        return {errc::invalid_argument, "a server TLS context cannot open connections"};
    if (server_name.empty())
        return {errc::invalid_argument, "a server name is needed to verify the server"};
    auto s = open(ctx, fd, false);
    if (!s) return s;
    SSL* ssl = (*s)->_ssl;
    bool ok = true;
    if (is_ip_address(server_name)) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.c_str()) == 1;
    } else {
        ok = SSL_set_tlsext_host_name(ssl, server_name.c_str()) == 1 &&
             SSL_set1_host(ssl, server_name.c_str()) == 1;
    }
    if (!ok) return {errc::invalid_argument, "bad server name '" + server_name + "'"};
    SSL_set_connect_state(ssl);
    return s;
}

tls_session::tls_session(ssl_st* ssl, std::unique_ptr<socket_state> sock, int fd, bool server)
    : _sock(std::move(sock)), _ssl(ssl), _fd(fd), _server(server) {}

result<std::unique_ptr<tls_session>> tls_session::open(const tls_context& ctx, int fd,
                                                       bool server) {
    auto st = std::make_unique<socket_state>();
    st->fd = fd;
    SSL* ssl = ctx.new_ssl();
    if (ssl == nullptr || !attach_socket(ssl, *st)) {
        SSL_free(ssl);
        return {errc::io_error, "cannot start a TLS session: " + openssl_reason()};
    }
    return std::unique_ptr<tls_session>(new tls_session(ssl, std::move(st), fd, server));
}

tls_session::~tls_session() {
    SSL_free(_ssl);
}

// A server sees a ClientHello record (content type 22) first; SSLv2-style hellos set
// the top bit. Anything else is a client that did not start TLS at all, which
// OpenSSL would only call a "wrong version number".
tls_session::status tls_session::check_first_byte() {
    for (;;) {
        unsigned char b = 0;
        ssize_t n = ::recv(_fd, &b, 1, MSG_PEEK);
        if (n == 1) {
            _first_byte_checked = true;
            if ((b >= 20 && b <= 23) || (b & 0x80) != 0) return status::ok;
            _failed = true;
            _error = "peer spoke plaintext to a TLS listener";
            return status::failed;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            _last_errno = errno;
            return status::want_read;
        }
        _failed = true;
        _error = n == 0 ? "peer closed the connection before the TLS handshake"
                        : std::string("read error: ") + std::strerror(errno);
        return status::failed;
    }
}

tls_session::status tls_session::handshake() {
    if (_done) return status::ok;
    if (_failed) return status::failed;
    if (_server && !_first_byte_checked) {
        if (auto st = check_first_byte(); st != status::ok) return st;
    }
    ERR_clear_error();
    int r = SSL_do_handshake(_ssl);
    if (r == 1) {
        _done = true;
        _peer_cn = verified_common_name(_ssl);
        return status::ok;
    }
    return fail(r, true);
}

tls_session::status tls_session::read(void* buf, size_t len, size_t& n) {
    n = 0;
    ERR_clear_error();
    int r = SSL_read_ex(_ssl, buf, len, &n);
    if (r == 1) return status::ok;
    return fail(r, false);
}

tls_session::status tls_session::write(const void* buf, size_t len, size_t& n) {
    n = 0;
    // Bounds the collected records to one write's worth.
    if (auto st = flush(); st != status::ok) return st;
    ERR_clear_error();
    // With SSL_MODE_ENABLE_PARTIAL_WRITE, SSL_write_ex returns after each 16 KiB
    // record; calling it again for the rest collects every record of this write, so
    // they leave in one send() (one send per record took a quarter of the system calls
    // of a TLS consume, and woke the reader as often).
    const auto* p = static_cast<const unsigned char*>(buf);
    _sock->collect = true;
    int r = 1;
    while (n < len) {
        size_t w = 0;
        r = SSL_write_ex(_ssl, p + n, len - n, &w);
        if (r != 1) break;
        n += w;
    }
    _sock->collect = false;
    // Collecting never blocks the BIO, but OpenSSL allows any SSL_write to want a read
    // or a write; one that does after some records reports the bytes taken, and the
    // caller retries the rest.
    if (r != 1) {
        auto st = fail(r, false);
        if (n == 0 || st == status::closed || st == status::failed) return st;
    }
    // The bytes are taken; what the socket refuses now leaves with the next flush.
    if (auto st = flush(); st == status::closed || st == status::failed) return st;
    return status::ok;
}

bool tls_session::has_unflushed() const {
    return !_sock->out.empty();
}

tls_session::status tls_session::flush() {
    int err = _sock->send_collected();
    if (err == 0) return status::ok;
    _last_errno = err;
    if (retryable(err)) return status::want_write;
    _failed = true;
    if (err == EPIPE || err == ECONNRESET) {
        _error = "peer closed the connection";
        return status::closed;
    }
    _error = std::string("socket error: ") + std::strerror(err);
    return status::failed;
}

bool tls_session::has_pending() const {
    return SSL_has_pending(_ssl) == 1;
}

void tls_session::close_notify() {
    if (!_done || _failed || _notified) return;
    _notified = true;
    ERR_clear_error();
    SSL_shutdown(_ssl);  // best effort: sends our alert, does not wait for the peer's
    ERR_clear_error();
}

std::string tls_session::description() const {
    return std::string(SSL_get_version(_ssl)) + " " + SSL_get_cipher_name(_ssl);
}

tls_session::status tls_session::fail(int ret, bool in_handshake) {
    const int saved_errno = errno;
    _last_errno = saved_errno;
    const int err = SSL_get_error(_ssl, ret);
    if (err == SSL_ERROR_WANT_READ) return status::want_read;
    if (err == SSL_ERROR_WANT_WRITE) return status::want_write;
    const char* eof_words = in_handshake ? "peer closed the connection during the TLS handshake"
                                         : "peer closed the connection";
    if (err == SSL_ERROR_ZERO_RETURN) {  // close_notify: a clean end
        _error = eof_words;
        ERR_clear_error();
        return status::closed;
    }
    _failed = true;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        if (saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE) {
            _error = saved_errno == 0
                         ? eof_words
                         : std::string(eof_words) + " (" + std::strerror(saved_errno) + ")";
            return in_handshake ? status::failed : status::closed;
        }
        _error = std::string("socket error: ") + std::strerror(saved_errno);
        return status::failed;
    }
    const unsigned long e = ERR_peek_error();
    const int reason = ERR_GET_REASON(e);
    switch (reason) {
        case SSL_R_UNEXPECTED_EOF_WHILE_READING:
            ERR_clear_error();
            _error = eof_words;
            return in_handshake ? status::failed : status::closed;
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
            _error = "client sent no certificate";
            break;
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            _error = std::string("certificate verify failed: ") +
                     X509_verify_cert_error_string(SSL_get_verify_result(_ssl));
            break;
        case SSL_R_UNSUPPORTED_PROTOCOL:
        case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
        case SSL_R_NO_PROTOCOLS_AVAILABLE:
            _error = "peer does not speak TLS 1.2 or 1.3 (the only versions allowed)";
            break;
        case SSL_R_NO_SHARED_CIPHER:
            _error = "no cipher suite in common with the peer";
            break;
        case SSL_R_WRONG_VERSION_NUMBER:
        case SSL_R_HTTP_REQUEST:
        case SSL_R_PACKET_LENGTH_TOO_LONG:
            _error = in_handshake && !_server ? "server did not answer with TLS (plaintext port?)"
                                              : "peer did not speak TLS";
            break;
        case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            _error = "server requires a client certificate";
            break;
        case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
            _error = "peer does not trust our certificate (unknown CA)";
            break;
        default:
            if (reason > SSL_AD_REASON_OFFSET) {
                _error = std::string("peer sent alert: ") + openssl_reason();
            } else {
                _error = openssl_reason();
            }
            break;
    }
    ERR_clear_error();
    if (in_handshake) _error = "TLS handshake failed: " + _error;
    return status::failed;
}

}  // namespace sluice::net
