#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// Kafka's DeleteRecordsRequest.HIGH_WATERMARK: delete everything up to the high watermark.
inline constexpr int64_t delete_records_to_high_watermark = -1;

struct delete_records_request {
    struct partition {
        int32_t partition_index = 0;
        // Records below this offset go (the new log start offset), or
        // delete_records_to_high_watermark.
        int64_t offset = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(offset);
        }
    };
    using topic = topic_entries<partition>;
    std::vector<topic> topics;
    int32_t timeout_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(topics);
        f(timeout_ms);
    }
};

struct delete_records_response {
    struct partition {
        int32_t partition_index = 0;
        int64_t low_watermark = -1;  // the log start offset after the deletion; -1 on error
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(low_watermark);
            f(error_code);
        }
    };
    using topic = topic_entries<partition>;
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(topics);
    }
};

}  // namespace sluice::protocol
