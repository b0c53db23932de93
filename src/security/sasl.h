#pragma once

// The server side of SASL exchanges: PLAIN (RFC 4616) and SCRAM-SHA-256/512
// (RFC 5802, RFC 7677), as Kafka's SaslAuthenticate and the PostgreSQL wire carry them.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "security/credential.h"

namespace sluice::security {

// Mechanisms this build offers, in the order announced.
std::span<const std::string_view> supported_mechanisms();

class sasl_server {
  public:
    struct step_result {
        enum class outcome { challenge, success, failure };
        outcome result = outcome::failure;
        std::string response;  // bytes for the client (challenge, or final data on success)
        // On failure, for the log: why, naming the user when known. Clients get a generic
        // message so that they cannot tell an unknown user from a wrong password.
        std::string reason;
    };
    virtual ~sasl_server() = default;
    // One client message in, the answer out. After success or failure the exchange is
    // over; further calls fail.
    virtual step_result step(std::string_view client_message) = 0;
    // The authenticated user name, once step() succeeded.
    virtual const std::string& user() const = 0;
};

// nullptr for a mechanism not in supported_mechanisms(). `source` must outlive the
// exchange. `default_user` is the name a SCRAM client-first message with an empty
// `n=` means (the PostgreSQL wire sends the user in its startup message instead).
std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism,
                                              const credential_source& source,
                                              std::string default_user = {});

// A password login (SASL/PLAIN, and the SQL endpoints' cleartext and Basic logins),
// checked against the user's stored SCRAM credentials: empty when the password derives
// one of them, otherwise why not, for the log. Clients must get one message whatever the
// reason; an unknown user costs the same key derivation as a known one, so timing does
// not tell them apart either.
std::string check_password(const credential_source& source, const std::string& user,
                           std::string_view password);

// The client side of SCRAM, for tests and tools.
class scram_client {
  public:
    scram_client(scram_mechanism m, std::string user, std::string password);
    // With a fixed client nonce (printable ASCII, no ','), for test vectors only.
    scram_client(scram_mechanism m, std::string user, std::string password, std::string nonce);
    std::string client_first();
    // Empty on a malformed server message.
    std::string client_final(std::string_view server_first);
    bool verify_server_final(std::string_view server_final) const;

  private:
    scram_mechanism _mech;
    std::string _user, _password, _nonce, _client_first_bare, _auth_message, _server_key;
};

}  // namespace sluice::security
