#include "broker/connection_quotas.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>

namespace sluice::broker {
namespace {

bool is_ip(const std::string& s) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

}  // namespace

std::string peer_address(std::string_view peer) {
    auto colon = peer.rfind(':');
    auto host = colon == std::string_view::npos ? peer : peer.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    return std::string(host);
}

result<std::map<std::string, int64_t>> parse_ip_overrides(std::string_view text) {
    std::map<std::string, int64_t> out;
    while (!trim(text).empty()) {
        auto comma = text.find(',');
        auto entry = trim(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        auto colon = entry.rfind(':');
        int64_t n = -1;
        std::string ip;
        if (colon != std::string_view::npos) {
            auto count = trim(entry.substr(colon + 1));
            auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
            if (ec != std::errc() || end != count.data() + count.size()) n = -1;
            ip = peer_address(entry);
        }
        if (n < 0 || n > INT32_MAX || !is_ip(ip))
            return {errc::invalid_config,
                    fmt::format("invalid entry '{}' in max.connections.per.ip.overrides: "
                                "IP:COUNT is needed (an IP address, not a host name)",
                                entry)};
        out[ip] = n;
    }
    return out;
}

std::optional<std::string> connection_quotas::admit(const std::string& ip) {
    if (_open >= _limits.max)
        return fmt::format("{} connections open, max.connections is {}", _open, _limits.max);
    auto it = _limits.per_ip_overrides.find(ip);
    const int64_t limit = it == _limits.per_ip_overrides.end() ? _limits.per_ip : it->second;
    auto& from_ip = _by_ip[ip];
    if (from_ip >= limit) {
        auto why = fmt::format("{} connections open from {}, {} is {}", from_ip, ip,
                               it == _limits.per_ip_overrides.end()
                                   ? "max.connections.per.ip"
                                   : "its max.connections.per.ip.overrides entry",
                               limit);
        if (from_ip == 0) _by_ip.erase(ip);
        return why;
    }
    ++from_ip;
    ++_open;
    return std::nullopt;
}

void connection_quotas::release(const std::string& ip) {
    if (_open > 0) --_open;
    auto it = _by_ip.find(ip);
    if (it == _by_ip.end()) return;
    if (--it->second <= 0) _by_ip.erase(it);
}

}  // namespace sluice::broker
