#pragma once

// TLS for the network layer: a context built from PEM files (reloadable while the
// server runs) and a session over one socket, shared by the event-loop connection and
// the blocking stream socket. OpenSSL types stay out of this header.

#include <sys/types.h>

#include <cstddef>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

struct ssl_st;
struct ssl_ctx_st;

namespace sluice::net {

struct tls_settings {
    std::string cert_file;       // PEM: the certificate, then any intermediates
    std::string key_file;        // PEM private key, unencrypted
    std::string client_ca_file;  // PEM CAs that sign client certificates
    enum class client_auth_mode {
        none,       // no client certificate is asked for
        requested,  // asked for; one that is sent must verify
        required,   // the handshake fails without a verified one
    };
    client_auth_mode client_auth = client_auth_mode::none;
};

// Certificates and policy for TLS sessions. Thread-safe: sessions may start on any
// thread while another thread reloads.
class tls_context {
  public:
    // TLS 1.2 (ECDHE with AES-GCM or ChaCha20-Poly1305) and TLS 1.3; no compression,
    // no renegotiation.
    static result<std::shared_ptr<tls_context>> create_server(const tls_settings& s);
    // For tools: verifies the server against `ca_file` (the system store when empty)
    // and the name given at connect; presents cert_file/key_file when given.
    static result<std::shared_ptr<tls_context>> create_client(std::string ca_file,
                                                              std::string cert_file = {},
                                                              std::string key_file = {});
    ~tls_context();
    tls_context(const tls_context&) = delete;
    tls_context& operator=(const tls_context&) = delete;

    // Re-reads the files; new sessions use them, open ones keep what they have. On
    // error the previous state stays in use.
    result<void> reload();
    // reload() when a file's mtime or size differs from the last attempt; true when a
    // reload happened. Cheap (a stat per file), for periodic calls.
    result<bool> reload_if_changed();

    bool is_server() const { return _server; }
    const tls_settings& settings() const { return _settings; }
    // A new OpenSSL session from the current state; nullptr when out of memory.
    ssl_st* new_ssl() const;

  private:
    struct file_stamp {
        dev_t dev = 0;
        ino_t ino = 0;
        timespec mtime{};
        off_t size = -1;
        bool operator==(const file_stamp& o) const;
    };

    tls_context(bool server, tls_settings s) : _server(server), _settings(std::move(s)) {}
    std::vector<file_stamp> stamp_files() const;
    result<ssl_ctx_st*> build() const;

    const bool _server;
    const tls_settings _settings;
    mutable std::mutex _mu;
    ssl_ctx_st* _ctx = nullptr;       // guarded by _mu
    std::vector<file_stamp> _stamps;  // guarded by _mu: of the last attempt
};

// One TLS session over a connected socket, blocking or not (whatever the socket is).
// Not thread-safe: one thread drives it, as one thread drives its socket.
class tls_session {
  public:
    enum class status {
        ok,          // done (for reads and writes: some bytes moved)
        want_read,   // retry once the socket is readable
        want_write,  // retry once the socket is writable
        closed,      // the peer ended the session (close_notify or end of stream)
        failed,      // see error()
    };

    // Server side of a connection accepted on `fd`.
    static result<std::unique_ptr<tls_session>> accept(const tls_context& ctx, int fd);
    // Client side; `server_name` (host name or IP address) is sent as SNI when it is
    // a name and must match the server certificate.
    static result<std::unique_ptr<tls_session>> connect(const tls_context& ctx, int fd,
                                                        const std::string& server_name);
    ~tls_session();
    tls_session(const tls_session&) = delete;
    tls_session& operator=(const tls_session&) = delete;

    // Drives the handshake; `ok` once it is complete.
    status handshake();
    bool handshake_done() const { return _done; }
    // `n` receives the bytes moved when the status is `ok`. Writes may be partial.
    status read(void* buf, size_t len, size_t& n);
    // The records of one write leave in one send() rather than one per 16 KiB record;
    // what the socket does not take waits in the session (has_unflushed()) and goes
    // out before anything else.
    status write(const void* buf, size_t len, size_t& n);
    // Sends records still waiting from an earlier write.
    status flush();
    bool has_unflushed() const;
    // Decrypted or undecrypted bytes inside OpenSSL: readiness of the socket says
    // nothing of them.
    bool has_pending() const;
    // Sends close_notify once, without waiting for the peer's; skipped after a failure.
    void close_notify();

    // The verified peer certificate's subject common name, cached at handshake.
    const std::optional<std::string>& peer_common_name() const { return _peer_cn; }
    // Plain words for the last failure ("client sent no certificate").
    const std::string& error() const { return _error; }
    // "TLSv1.3 TLS_AES_256_GCM_SHA384", for log lines.
    std::string description() const;
    // errno when the last call returned want_read or want_write: EINTR for a signal,
    // EAGAIN for a non-blocking socket or a blocking one's timeout.
    int last_errno() const { return _last_errno; }

    // What our BIO knows: the socket and records not yet sent (defined in tls.cc).
    struct socket_state;

  private:
    tls_session(ssl_st* ssl, std::unique_ptr<socket_state> sock, int fd, bool server);
    // A session of `ctx` on `fd`, its socket bound; accept() and connect() set the role.
    static result<std::unique_ptr<tls_session>> open(const tls_context& ctx, int fd, bool server);
    status fail(int ret, bool in_handshake);
    status check_first_byte();

    std::unique_ptr<socket_state> _sock;  // outlives _ssl, whose BIO points to it
    ssl_st* _ssl;
    int _fd;
    bool _server;
    bool _done = false;
    bool _first_byte_checked = false;
    bool _failed = false;
    bool _notified = false;
    int _last_errno = 0;
    std::optional<std::string> _peer_cn;
    std::string _error;
};

}  // namespace sluice::net
