#include "sql/http/router.h"

#include <gtest/gtest.h>

namespace sluice::sql::http {
namespace {

route_handler tagged(std::string* out, std::string tag) {
    return [out, tag](const http_request&, http_response&) { *out = tag; };
}

TEST(Router, ExactPrefixAndMethods) {
    router r;
    std::string hit;
    r.add("POST", "/v1/sql", tagged(&hit, "sql"));
    r.add("GET", "/v1/expansions", tagged(&hit, "list"));
    r.add("POST", "/v1/expansions", tagged(&hit, "create"));
    r.add("GET", "/v1/expansions/*", tagged(&hit, "get"));
    r.add("DELETE", "/v1/expansions/*", tagged(&hit, "delete"));
    r.add("GET", "/v1/expansions/special", tagged(&hit, "special"));

    http_request req;
    http_response resp([](std::string_view) { return true; }, {}, true);
    auto run = [&](std::string_view method, std::string_view path) {
        auto m = r.find(method, path);
        hit.clear();
        if (m.handler) (*m.handler)(req, resp);
        return m;
    };
    EXPECT_TRUE(run("POST", "/v1/sql").handler);
    EXPECT_EQ(hit, "sql");
    run("POST", "/v1/expansions");
    EXPECT_EQ(hit, "create");
    auto m = run("DELETE", "/v1/expansions/orders");
    EXPECT_EQ(hit, "delete");
    EXPECT_EQ(m.suffix, "orders");
    run("GET", "/v1/expansions/special");  // exact wins over the prefix
    EXPECT_EQ(hit, "special");
    run("GET", "/v1/expansions/other");
    EXPECT_EQ(hit, "get");

    m = run("GET", "/v1/sql");
    EXPECT_FALSE(m.handler);
    EXPECT_EQ(m.status, 405);
    EXPECT_EQ(m.allow, "POST");
    m = run("PUT", "/v1/expansions/x");
    EXPECT_EQ(m.status, 405);
    EXPECT_EQ(m.allow, "GET, DELETE");
    m = run("GET", "/v1/nothing");
    EXPECT_EQ(m.status, 404);
    EXPECT_EQ(run("GET", "/v1/sqlx").status, 404);

    r.add("POST", "/v1/sql", tagged(&hit, "replaced"));
    run("POST", "/v1/sql");
    EXPECT_EQ(hit, "replaced");
}

}  // namespace
}  // namespace sluice::sql::http
