// DescribeAcls, CreateAcls and DeleteAcls: Kafka's ACLs as a view of identity policies
// (broker/acl_service.h, docs/security.md "Kafka ACLs").

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/acls.h"

namespace sluice::broker {
namespace {

namespace acl = security::acl;
using protocol::error_code;
using security::resource_kind;

acl::filter to_filter(const protocol::acl_filter& f) {
    return {static_cast<acl::resource_type>(f.resource_type),
            f.resource_name,
            static_cast<acl::pattern_type>(f.pattern_type),
            f.principal,
            f.host,
            static_cast<acl::operation>(f.operation),
            static_cast<acl::permission>(f.permission_type)};
}

protocol::acl_entry to_entry(const acl::binding& b) {
    return {b.principal, b.host, static_cast<int8_t>(b.op), static_cast<int8_t>(b.perm)};
}

error_code code_of(const error& e) {
    return e.code == errc::invalid_argument ? error_code::invalid_request
                                            : error_code::unknown_server_error;
}

}  // namespace

void handle_describe_acls(const request_context& ctx, request_body body) {
    protocol::describe_acls_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::describe_acls_response resp;
    auto f = to_filter(req.filter);
    if (!ctx.allowed(resource_kind::cluster)) {
        resp.error_code = code(error_code::cluster_authorization_failed);
        resp.error_message = "KafkaDescribe on sluice:cluster is needed to describe ACLs";
    } else if (auto why = acl::filter_error(f)) {
        resp.error_code = code(error_code::invalid_request);
        resp.error_message = *why;
        log_warn("security", "{}: DescribeAcls refused: {}", ctx.client(), *why);
    } else {
        // Bindings come sorted by resource type, name and pattern: one entry per resource.
        for (const auto& b : ctx.b.acls().describe(f)) {
            auto* last = resp.resources.empty() ? nullptr : &resp.resources.back();
            const auto type = static_cast<int8_t>(b.type);
            const auto pattern = static_cast<int8_t>(b.pattern);
            if (!last || last->resource_type != type || last->resource_name != b.name ||
                last->pattern_type != pattern)
                last = &resp.resources.emplace_back(
                    protocol::describe_acls_response::resource{type, b.name, pattern, {}});
            last->acls.push_back(to_entry(b));
        }
    }
    ctx.respond(resp);
}

void handle_create_acls(const request_context& ctx, request_body body) {
    protocol::create_acls_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::create_acls_response resp;
    std::vector<acl::binding> bindings;
    for (const auto& c : req.creations)
        bindings.push_back({static_cast<acl::resource_type>(c.resource_type), c.resource_name,
                            static_cast<acl::pattern_type>(c.pattern_type), c.entry.principal,
                            c.entry.host, static_cast<acl::operation>(c.entry.operation),
                            static_cast<acl::permission>(c.entry.permission_type)});
    if (!ctx.allowed(resource_kind::cluster)) {
        for (size_t i = 0; i < bindings.size(); ++i)
            resp.results.push_back({code(error_code::cluster_authorization_failed),
                                    "KafkaAlter on sluice:cluster is needed to create ACLs"});
        ctx.respond(resp);
        return;
    }
    auto results = ctx.b.acls().create(bindings);
    for (size_t i = 0; i < bindings.size(); ++i) {
        auto& out = resp.results.emplace_back();
        if (results[i]) {
            log_info("security", "{}: {} created ACL {}", ctx.client(),
                     ctx.principal().to_string(), acl::to_string(bindings[i]));
            continue;
        }
        out.error_code = code(code_of(results[i].err()));
        out.error_message = results[i].err().message;
        log_warn("security", "{}: CreateAcls refused {}: {}", ctx.client(),
                 acl::to_string(bindings[i]), results[i].err().message);
    }
    ctx.respond(resp);
}

void handle_delete_acls(const request_context& ctx, request_body body) {
    protocol::delete_acls_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::delete_acls_response resp;
    bool authorized = ctx.allowed(resource_kind::cluster);
    for (const auto& pf : req.filters) {
        auto& out = resp.filter_results.emplace_back();
        auto f = to_filter(pf);
        auto why = acl::filter_error(f);
        if (!authorized || why) {
            out.error_code = code(authorized ? error_code::invalid_request
                                             : error_code::cluster_authorization_failed);
            out.error_message =
                authorized ? *why : "KafkaAlter on sluice:cluster is needed to delete ACLs";
            continue;
        }
        for (auto& r : ctx.b.acls().remove(f)) {
            auto& m = out.matching_acls.emplace_back();
            m.resource_type = static_cast<int8_t>(r.b.type);
            m.resource_name = r.b.name;
            m.pattern_type = static_cast<int8_t>(r.b.pattern);
            m.entry = to_entry(r.b);
            if (!r.refused) {
                log_info("security", "{}: {} deleted ACL {}", ctx.client(),
                         ctx.principal().to_string(), acl::to_string(r.b));
                continue;
            }
            m.error_code = code(error_code::invalid_request);
            m.error_message = *r.refused;
            log_warn("security", "{}: DeleteAcls kept {}: {}", ctx.client(),
                     acl::to_string(r.b), *r.refused);
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
