#pragma once

// DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0 (flexible).

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct describe_user_scram_credentials_request {
    struct user_name {
        std::string name;
        template <typename F>
        void serde(F& f) {
            f(name);
        }
    };
    std::optional<std::vector<user_name>> users;  // null or empty: every user

    template <typename F>
    void serde(F& f) {
        f(users);
    }
};

struct describe_user_scram_credentials_response {
    struct credential_info {
        int8_t mechanism = 0;
        int32_t iterations = 0;
        template <typename F>
        void serde(F& f) {
            f(mechanism);
            f(iterations);
        }
    };
    struct result {
        std::string user;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        std::vector<credential_info> credential_infos;
        template <typename F>
        void serde(F& f) {
            f(user);
            f(error_code);
            f(error_message);
            f(credential_infos);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<result> results;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(results);
    }
};

struct alter_user_scram_credentials_request {
    struct deletion {
        std::string name;
        int8_t mechanism = 0;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(mechanism);
        }
    };
    struct upsertion {
        std::string name;
        int8_t mechanism = 0;
        int32_t iterations = 0;
        bytes salt;
        bytes salted_password;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(mechanism);
            f(iterations);
            f(salt);
            f(salted_password);
        }
    };
    std::vector<deletion> deletions;
    std::vector<upsertion> upsertions;

    template <typename F>
    void serde(F& f) {
        f(deletions);
        f(upsertions);
    }
};

struct alter_user_scram_credentials_response {
    struct result {
        std::string user;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(user);
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

}  // namespace sluice::protocol
