#include "sql/http/http_message.h"

#include <gtest/gtest.h>

#include "string_reader.h"

namespace sluice::sql::http {
namespace {

using test::reader_of;

struct parsed {
    read_result r;
    http_request req;
};

parsed parse(const std::string& text, size_t piece = 1 << 20, parse_limits lim = {}) {
    auto in = reader_of(text, piece);
    parsed p;
    p.r = read_request_head(in, p.req, lim);
    if (p.r.what == read_result::kind::request) p.r = read_request_body(in, p.req, lim);
    return p;
}

TEST(HttpMessage, ParsesRequestWithBodyInOneByteReads) {
    auto p = parse(
        "POST /v1/sql?format=csv&param=a%20b&param=x+y HTTP/1.1\r\nHost: h\r\n"
        "Content-Length: 8\r\nX-Thing:   padded value  \r\n\r\nSELECT 1",
        1);
    ASSERT_EQ(p.r.what, read_result::kind::request) << p.r.message;
    EXPECT_EQ(p.req.method, "POST");
    EXPECT_EQ(p.req.path, "/v1/sql");
    EXPECT_EQ(p.req.body, "SELECT 1");
    EXPECT_EQ(p.req.header("x-thing").value_or(""), "padded value");
    auto q = p.req.query_params();
    ASSERT_TRUE(q);
    ASSERT_EQ(q->size(), 3u);
    EXPECT_EQ((*q)[1].second, "a b");
    EXPECT_EQ((*q)[2].second, "x y");
    EXPECT_TRUE(p.req.keep_alive());
}

TEST(HttpMessage, ChunkedBody) {
    auto p = parse(
        "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4;ext=1\r\nSELE\r\n4\r\nCT 1\r\n0\r\nTrailer: t\r\n\r\n",
        3);
    ASSERT_EQ(p.r.what, read_result::kind::request) << p.r.message;
    EXPECT_EQ(p.req.body, "SELECT 1");
}

TEST(HttpMessage, PipelinedRequestsStayApart) {
    auto in = reader_of(
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: "
        "2\r\n\r\nokGET /c HTTP/1.0\r\n\r\n");
    http_request req;
    parse_limits lim;
    for (const char* path : {"/a", "/b", "/c"}) {
        ASSERT_EQ(read_request_head(in, req, lim).what, read_result::kind::request);
        ASSERT_EQ(read_request_body(in, req, lim).what, read_result::kind::request);
        EXPECT_EQ(req.path, path);
    }
    EXPECT_EQ(req.minor_version, 0);
    EXPECT_FALSE(req.keep_alive());  // HTTP/1.0 without keep-alive
    EXPECT_EQ(read_request_head(in, req, lim).what, read_result::kind::closed);
}

TEST(HttpMessage, RefusesMalformedRequests) {
    struct bad {
        const char* text;
        int status;
    };
    const bad cases[] = {
        {"garbage\r\n\r\n", 400},
        {"GET /x HTTP/1.1\r\n\r\n", 400},                        // no Host
        {"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},  // two Hosts
        {"GET /x HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        {"GET /x HTTX/1.1\r\nHost: h\r\n\r\n", 400},
        {"GET  /x HTTP/1.1\r\nHost: h\r\n\r\n", 400},   // two spaces
        {"GET x HTTP/1.1\r\nHost: h\r\n\r\n", 400},     // not origin-form
        {"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // bad escape
        {"GET /x HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 400},
        {"GET /x HTTP/1.1\r\nHost: h\r\nName : v\r\n\r\n", 400},
        {"GET /x HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
        {"GET /x HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400},
        {"GET /x HTTP/1.1\nHost: h\r\n\r\n", 400},  // bare LF
        {"POST /x HTTP/1.1\r\nHost: h\r\n\r\n", 411},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", 413},
        {"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: h\r\nExpect: something\r\nContent-Length: 1\r\n\r\nx", 417},
    };
    for (const auto& c : cases) {
        auto p = parse(c.text);
        EXPECT_EQ(p.r.what, read_result::kind::error) << c.text;
        EXPECT_EQ(p.r.status, c.status) << c.text << " -> " << p.r.message;
    }
}

TEST(HttpMessage, LimitsOnHeadAndBody) {
    parse_limits lim;
    lim.max_head = 1024;
    lim.max_body = 10;
    std::string big(2000, 'a');
    EXPECT_EQ(parse("GET /" + big + " HTTP/1.1\r\n\r\n", 1 << 20, lim).r.status, 414);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nX: " + big + "\r\n\r\n", 100, lim).r.status, 431);
    std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (int i = 0; i < 101; ++i) many += "A: b\r\n";
    EXPECT_EQ(parse(many + "\r\n").r.status, 431);
    EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
                    1 << 20, lim)
                  .r.status,
              413);
}

TEST(HttpMessage, EmptyLinesBeforeARequestAndQuietClose) {
    EXPECT_EQ(parse("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").r.what,
              read_result::kind::request);
    EXPECT_EQ(parse("").r.what, read_result::kind::closed);
    EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost:").r.what, read_result::kind::closed);
}

TEST(HttpMessage, AbsoluteFormTarget) {
    auto p = parse("GET http://example.com:80/v1/health?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(p.r.what, read_result::kind::request);
    EXPECT_EQ(p.req.path, "/v1/health");
    EXPECT_EQ(p.req.query, "x=1");
}

TEST(HttpMessage, ExpectContinueRunsBeforeTheBody) {
    auto in = reader_of(
        "POST /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
    http_request req;
    parse_limits lim;
    ASSERT_EQ(read_request_head(in, req, lim).what, read_result::kind::request);
    bool called = false;
    ASSERT_EQ(read_request_body(in, req, lim, [&] { called = true; }).what,
              read_result::kind::request);
    EXPECT_TRUE(called);
    EXPECT_EQ(req.body, "ok");
}

TEST(HttpMessage, ResponseHeadAndChunk) {
    auto h = response_head(200, {{"Content-Type", "text/csv"}}, std::nullopt, true);
    EXPECT_EQ(h.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
    EXPECT_NE(h.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
    EXPECT_NE(h.find("Connection: close\r\n"), std::string::npos);
    EXPECT_EQ(h.substr(h.size() - 4), "\r\n\r\n");
    std::string c;
    append_chunk(c, std::string(26, 'x'));
    EXPECT_EQ(c, "1a\r\n" + std::string(26, 'x') + "\r\n");
}

TEST(HttpMessage, PercentCoding) {
    EXPECT_EQ(percent_decode("a%2Fb+c", true).value_or("?"), "a/b c");
    EXPECT_EQ(percent_decode("a+c", false).value_or("?"), "a+c");
    EXPECT_FALSE(percent_decode("%4", false));
    EXPECT_FALSE(percent_decode("%g0", false));
    EXPECT_EQ(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    EXPECT_EQ(percent_decode(percent_encode("x=1&y=$1 'q'"), true).value_or("?"), "x=1&y=$1 'q'");
}

}  // namespace
}  // namespace sluice::sql::http
