#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct delete_topics_request {
    struct topic_state {
        std::optional<std::string> name;
        uuid topic_id{};
        template <typename F>
        void serde(F& f) {
            f(name);
            f(topic_id);
        }
    };
    std::vector<topic_state> topics;     // v6+
    std::vector<std::string> topic_names;  // v0-v5
    int32_t timeout_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(topics, since(6));
        f(topic_names, range(0, 5));
        f(timeout_ms);
    }
};

struct delete_topics_response {
    struct result {
        std::optional<std::string> name;
        uuid topic_id{};
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(topic_id, since(6));
            f(error_code);
            f(error_message, since(5));
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<result> responses;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(responses);
    }
};

}  // namespace sluice::protocol
