#include "broker/config.h"

#include <array>
#include <utility>

namespace sluice::broker {
namespace {

constexpr std::array<std::pair<security_protocol, std::string_view>, 4> protocol_names{{
    {security_protocol::plaintext, "PLAINTEXT"},
    {security_protocol::ssl, "SSL"},
    {security_protocol::sasl_plaintext, "SASL_PLAINTEXT"},
    {security_protocol::sasl_ssl, "SASL_SSL"},
}};

}  // namespace

std::string_view protocol_name(security_protocol p) {
    for (const auto& [v, name] : protocol_names)
        if (v == p) return name;
    return "PLAINTEXT";
}

std::string listener_config::to_string() const {
    if (protocol == security_protocol::plaintext) return address.to_string();
    return std::string(protocol_name(protocol)) + "://" + address.to_string();
}

result<listener_config> parse_listener(const std::string& text) {
    listener_config out;
    std::string rest = text;
    if (auto sep = text.find("://"); sep != std::string::npos) {
        std::string_view name = std::string_view(text).substr(0, sep);
        bool found = false;
        for (const auto& [v, n] : protocol_names) {
            if (n == name) {
                out.protocol = v;
                found = true;
            }
        }
        if (!found) {
            return error{errc::invalid_argument,
                         "unknown security protocol '" + std::string(name) +
                             "' (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"};
        }
        rest = text.substr(sep + 3);
    }
    auto hp = net::parse_host_port(rest);
    if (!hp) return hp.err();
    out.address = *hp;
    return out;
}

}  // namespace sluice::broker
