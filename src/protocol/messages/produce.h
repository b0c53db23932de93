#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct produce_request {
    struct partition_data {
        int32_t index = 0;
        // Raw record batches, validated by the handler: a view into the request, which
        // the encoded message or the received frame must outlive.
        std::optional<bytes_view> records;
        template <typename F>
        void serde(F& f) {
            f(index);
            f(records);
        }
    };
    using topic_data = topic_entries<partition_data>;
    std::optional<std::string> transactional_id;
    int16_t acks = -1;
    int32_t timeout_ms = 0;
    std::vector<topic_data> topics;

    template <typename F>
    void serde(F& f) {
        f(transactional_id, since(3));
        f(acks);
        f(timeout_ms);
        f(topics);
    }
};

struct produce_response {
    struct record_error {
        int32_t batch_index = 0;
        std::optional<std::string> message;
        template <typename F>
        void serde(F& f) {
            f(batch_index);
            f(message);
        }
    };
    struct partition {
        int32_t index = 0;
        int16_t error_code = 0;
        int64_t base_offset = -1;
        int64_t log_append_time_ms = -1;
        int64_t log_start_offset = -1;
        std::vector<record_error> record_errors;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(index);
            f(error_code);
            f(base_offset);
            f(log_append_time_ms, since(2));
            f(log_start_offset, since(5));
            f(record_errors, since(8));
            f(error_message, since(8));
        }
    };
    using topic = topic_entries<partition>;
    std::vector<topic> responses;
    int32_t throttle_time_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(responses);
        f(throttle_time_ms, since(1));
    }
};

}  // namespace sluice::protocol
