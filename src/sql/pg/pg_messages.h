#pragma once

// The PostgreSQL frontend/backend protocol, version 3.0, as far as Sluice speaks it:
// decoding of the frontend messages into structs and encoding of the backend messages.
// Bytes only; pg_connection.cc drives the conversation. docs/sql-pg.md lists what is
// supported. Reference: the "Message Formats" chapter of the PostgreSQL manual.
//
// Framing: the first message of a connection has no type byte (int32 length including
// itself, then an int32 code); every later message is a type byte, an int32 length
// including itself (not the type byte), and the body. Integers are big-endian.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::sql::pg {

// Codes of the first packet (protocol version 1234.567x: requests, not versions).
inline constexpr int32_t protocol_3_0 = 196608;  // 3 << 16
inline constexpr int32_t ssl_request_code = 80877103;
inline constexpr int32_t gssenc_request_code = 80877104;
inline constexpr int32_t cancel_request_code = 80877102;

// PostgreSQL's own cap on a startup packet (MAX_STARTUP_PACKET_LENGTH).
inline constexpr uint32_t max_startup_length = 10'000;
// PostgreSQL refuses messages above 1 GiB (PQ_LARGE_MESSAGE_LIMIT); so do we.
inline constexpr uint32_t max_message_length = 1u << 30;

// Reads the fields of one message body; any read past the end clears ok() and returns
// zero values, so a decoder checks ok() once at the end.
class msg_reader {
  public:
    explicit msg_reader(std::string_view body) : _b(body) {}
    int16_t i16();
    int32_t i32();
    uint8_t u8();
    // A NUL-terminated string (the NUL is consumed, not returned).
    std::string_view cstr();
    std::string_view raw(size_t n);
    bool ok() const { return _ok; }
    bool at_end() const { return _pos == _b.size(); }

  private:
    bool need(size_t n);
    std::string_view _b;
    size_t _pos = 0;
    bool _ok = true;
};

// ---- The first packet ----

struct startup_packet {
    enum class kind { startup, ssl_request, gssenc_request, cancel, unsupported_version };
    kind what = kind::startup;
    int32_t version = 0;                                      // startup, unsupported_version
    std::vector<std::pair<std::string, std::string>> params;  // startup
    int32_t cancel_pid = 0;                                   // cancel
    int32_t cancel_secret = 0;
};
// `body` is the packet without its length word. nullopt: malformed.
std::optional<startup_packet> decode_startup(std::string_view body);

// ---- Frontend messages (extended query protocol) ----

struct parse_msg {
    std::string_view name;
    std::string_view query;
    std::vector<uint32_t> param_oids;  // 0: unspecified
};
struct bind_msg {
    std::string_view portal;
    std::string_view statement;
    std::vector<int16_t> param_formats;                   // 0, 1 or n entries (0 text, 1 binary)
    std::vector<std::optional<std::string_view>> params;  // nullopt: NULL
    std::vector<int16_t> result_formats;                  // 0, 1 or n entries
};
struct describe_msg {
    char what = 'S';  // 'S' statement, 'P' portal
    std::string_view name;
};
using close_msg = describe_msg;
struct execute_msg {
    std::string_view portal;
    int32_t max_rows = 0;  // 0: no limit
};

// Each returns false when the framing is broken (truncated, trailing bytes, negative
// counts); the meaning (format codes, counts that disagree) is the caller's to check.
bool decode(std::string_view body, parse_msg& m);
bool decode(std::string_view body, bind_msg& m);
bool decode(std::string_view body, describe_msg& m);
bool decode(std::string_view body, execute_msg& m);
// Query ('Q'): the SQL text.
bool decode_query(std::string_view body, std::string_view& sql);

// ---- Authentication (frontend 'p' messages; their meaning depends on what was asked) ----

// SASLInitialResponse: the mechanism chosen and the client's first message (empty when
// the client sent none, length -1).
struct sasl_initial_msg {
    std::string_view mechanism;
    std::string_view data;
};
bool decode(std::string_view body, sasl_initial_msg& m);
// PasswordMessage after AuthenticationCleartextPassword: the password.
bool decode_password(std::string_view body, std::string_view& password);
// SASLResponse: the body is the SASL message as is.

// ---- Backend messages (appended to `out`) ----

// Builds one backend message; the length word is patched by the destructor.
class msg_writer {
  public:
    msg_writer(std::string& out, char type);
    ~msg_writer();
    msg_writer(const msg_writer&) = delete;
    msg_writer& operator=(const msg_writer&) = delete;
    msg_writer& i16(int16_t v);
    msg_writer& i32(int32_t v);
    msg_writer& cstr(std::string_view s);
    msg_writer& raw(std::string_view s);
    // Position of the next byte, for writers that patch a length in place.
    size_t pos() const { return _out.size(); }
    std::string& out() { return _out; }

  private:
    std::string& _out;
    size_t _start;
};

// A field of a RowDescription.
struct field_desc {
    std::string name;
    uint32_t type_oid = 0;
    int16_t type_size = -1;
    int16_t format = 0;
    int32_t type_modifier = -1;  // numeric(p,s): ((p << 16) | s) + 4, as PostgreSQL's
};

// Severity, SQLSTATE and message of an ErrorResponse or NoticeResponse.
struct pg_error {
    std::string sqlstate;
    std::string message;
    std::string severity = "ERROR";  // ERROR, FATAL, WARNING, NOTICE
};

void put_authentication_ok(std::string& out);
void put_authentication_cleartext_password(std::string& out);
void put_authentication_sasl(std::string& out, const std::vector<std::string_view>& mechanisms);
void put_authentication_sasl_continue(std::string& out, std::string_view data);
void put_authentication_sasl_final(std::string& out, std::string_view data);
void put_parameter_status(std::string& out, std::string_view name, std::string_view value);
void put_backend_key_data(std::string& out, int32_t pid, int32_t secret);
void put_ready_for_query(std::string& out, char status);  // 'I', 'T' or 'E'
void put_negotiate_protocol_version(std::string& out, int32_t newest_minor,
                                    const std::vector<std::string>& unknown_options);
void put_row_description(std::string& out, const std::vector<field_desc>& fields);
void put_parameter_description(std::string& out, const std::vector<uint32_t>& oids);
void put_command_complete(std::string& out, std::string_view tag);
void put_error(std::string& out, const pg_error& e);   // 'E'
void put_notice(std::string& out, const pg_error& e);  // 'N'
// Messages made of the type byte alone.
void put_empty(std::string& out, char type);

// Backend message type bytes without a body.
inline constexpr char parse_complete = '1';
inline constexpr char bind_complete = '2';
inline constexpr char close_complete = '3';
inline constexpr char no_data = 'n';
inline constexpr char portal_suspended = 's';
inline constexpr char empty_query_response = 'I';

}  // namespace sluice::sql::pg
