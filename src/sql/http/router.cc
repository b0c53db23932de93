#include "sql/http/router.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace sluice::sql::http {

void router::add(std::string method, std::string path, route_handler h) {
    route r;
    r.prefix = path.size() >= 2 && path.ends_with("/*");
    if (r.prefix) path.pop_back();
    r.method = std::move(method);
    r.path = std::move(path);
    r.handler = std::make_shared<const route_handler>(std::move(h));
    std::unique_lock lk(_mu);
    for (auto& e : _routes) {
        if (e.method == r.method && e.path == r.path && e.prefix == r.prefix) {
            e.handler = std::move(r.handler);
            return;
        }
    }
    _routes.push_back(std::move(r));
}

router::match router::find(std::string_view method, std::string_view path) const {
    std::shared_lock lk(_mu);
    const route* best = nullptr;
    std::vector<std::string_view> allowed;
    // Exact beats prefix; a longer prefix beats a shorter one.
    auto rank = [](const route& r) { return r.prefix ? r.path.size() : SIZE_MAX; };
    for (const auto& r : _routes) {
        bool hit = r.prefix ? path.starts_with(r.path) : path == r.path;
        if (!hit) continue;
        if (r.method != method) {
            if (std::find(allowed.begin(), allowed.end(), r.method) == allowed.end())
                allowed.push_back(r.method);
            continue;
        }
        if (!best || rank(r) > rank(*best)) best = &r;
    }
    match m;
    if (best) {
        m.handler = best->handler;
        if (best->prefix) m.suffix = std::string(path.substr(best->path.size()));
        return m;
    }
    if (!allowed.empty()) {
        m.status = 405;
        for (auto a : allowed) {
            if (!m.allow.empty()) m.allow += ", ";
            m.allow += a;
        }
    }
    return m;
}

}  // namespace sluice::sql::http
