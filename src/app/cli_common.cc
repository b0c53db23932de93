#include "app/cli_common.h"

#include <ctime>
#include <iostream>

#include "protocol/error_code.h"
#include "sql/http/result_format.h"
#include "sql/http/table_format.h"
#include "sql/json_text.h"

namespace sluice::app {

void add_broker_flags(CLI::App* cmd, broker_flags& flags) {
    cmd->add_option("--bootstrap,-b", flags.bootstrap, "Broker address HOST:PORT")
        ->capture_default_str();
    add_client_flags(cmd, flags.client);
}

result<std::unique_ptr<admin_client>> connect_admin(const broker_flags& flags) {
    auto cfg = load_client_config(flags.client);
    if (!cfg) return cfg.err();
    auto addr = net::parse_host_port(flags.bootstrap);
    if (!addr) return addr.err();
    auto c = std::make_unique<admin_client>();
    if (auto r = c->connect(*addr, *cfg); !r) return r.err();
    return c;
}

int fail(const std::string& what) {
    std::cerr << "error: " << what << "\n";
    return 1;
}

std::string error_text(int16_t code, const std::optional<std::string>& msg) {
    std::string s(protocol::error_name(static_cast<protocol::error_code>(code)));
    if (msg && !msg->empty()) s += ": " + *msg;
    return s;
}

result<protocol::metadata_response> fetch_metadata(admin_client& c,
                                                   const std::optional<std::string>& topic) {
    protocol::metadata_request req;
    if (topic) req.topics = std::vector<protocol::metadata_request::topic>{{{}, *topic}};
    req.allow_auto_topic_creation = false;
    return c.call<protocol::metadata_request, protocol::metadata_response>(
        protocol::api_key::metadata, 12, req);
}

std::optional<int64_t> parse_time(const std::string& text) {
    if (text.empty()) return std::nullopt;
    if (text.find_first_not_of("0123456789") == std::string::npos) {
        try {
            return std::stoll(text);
        } catch (const std::out_of_range&) {
            return std::nullopt;
        }
    }
    std::tm tm{};
    const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end) return std::nullopt;
    int64_t millis = 0;
    if (*end == '.') {  // fractional seconds: the first three digits are milliseconds
        int digits = 0;
        for (++end; *end >= '0' && *end <= '9'; ++end, ++digits)
            if (digits < 3) millis = millis * 10 + (*end - '0');
        for (; digits < 3; ++digits) millis *= 10;
    }
    if (*end == 'Z') ++end;
    if (*end != '\0') return std::nullopt;
    return static_cast<int64_t>(timegm(&tm)) * 1000 + millis;
}

void add_format_flag(CLI::App* cmd, std::string& format) {
    cmd->add_option("--format", format, "Output: table (for a terminal) or json")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
}

output_format format_of(const std::string& format) {
    return format == "json" ? output_format::json : output_format::table;
}

std::string render(const output_rows& out, output_format f) {
    if (f == output_format::table) {
        std::vector<sql::column> cols;
        for (const auto& name : out.columns) cols.push_back({name, ""});
        return sql::http::render_table(cols, out.rows);
    }
    std::string s;
    for (const auto& row : out.rows) {
        s += '{';
        for (size_t i = 0; i < out.columns.size() && i < row.size(); ++i) {
            if (i > 0) s += ',';
            sql::append_json_string(s, out.columns[i]);
            s += ':';
            sql::http::append_json_value(s, row[i]);
        }
        s += "}\n";
    }
    return s;
}

}  // namespace sluice::app
