#pragma once

// DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v0-v3 (flexible from v2).
// Resource types, pattern types, operations and permissions are Kafka's int8 codes
// (security/acl.h). v0 has no pattern type: it is LITERAL (3).

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

inline constexpr int8_t literal_pattern_type = 3;

// An ACL's principal, host, operation and permission: the tail every message shares.
struct acl_entry {
    std::string principal;
    std::string host;
    int8_t operation = 0;
    int8_t permission_type = 0;
    template <typename F>
    void serde(F& f) {
        f(principal);
        f(host);
        f(operation);
        f(permission_type);
    }
};

// The filter of DescribeAcls and of each DeleteAcls entry: null strings match anything.
struct acl_filter {
    int8_t resource_type = 0;
    std::optional<std::string> resource_name;
    int8_t pattern_type = literal_pattern_type;
    std::optional<std::string> principal;
    std::optional<std::string> host;
    int8_t operation = 0;
    int8_t permission_type = 0;
    template <typename F>
    void serde(F& f) {
        f(resource_type);
        f(resource_name);
        f(pattern_type, since(1));
        f(principal);
        f(host);
        f(operation);
        f(permission_type);
    }
};

struct describe_acls_request {
    acl_filter filter;
    template <typename F>
    void serde(F& f) {
        filter.serde(f);  // the filter's fields are the request's top level
    }
};

struct describe_acls_response {
    struct resource {
        int8_t resource_type = 0;
        std::string resource_name;
        int8_t pattern_type = literal_pattern_type;
        std::vector<acl_entry> acls;
        template <typename F>
        void serde(F& f) {
            f(resource_type);
            f(resource_name);
            f(pattern_type, since(1));
            f(acls);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<resource> resources;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(resources);
    }
};

struct create_acls_request {
    struct creation {
        int8_t resource_type = 0;
        std::string resource_name;
        int8_t pattern_type = literal_pattern_type;
        acl_entry entry;
        template <typename F>
        void serde(F& f) {
            f(resource_type);
            f(resource_name);
            f(pattern_type, since(1));
            entry.serde(f);
        }
    };
    std::vector<creation> creations;
    template <typename F>
    void serde(F& f) {
        f(creations);
    }
};

struct create_acls_response {
    struct result {
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<result> results;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(results);
    }
};

struct delete_acls_request {
    std::vector<acl_filter> filters;
    template <typename F>
    void serde(F& f) {
        f(filters);
    }
};

struct delete_acls_response {
    struct matching_acl {
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        int8_t resource_type = 0;
        std::string resource_name;
        int8_t pattern_type = literal_pattern_type;
        acl_entry entry;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
            f(resource_type);
            f(resource_name);
            f(pattern_type, since(1));
            entry.serde(f);
        }
    };
    struct filter_result {
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        std::vector<matching_acl> matching_acls;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
            f(matching_acls);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<filter_result> filter_results;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(filter_results);
    }
};

}  // namespace sluice::protocol
