#pragma once

// librdkafka handles for `sluice produce` and `sluice consume`, configured from the same
// flags as every other command (client_config's properties are librdkafka's names).

#include <librdkafka/rdkafka.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/cli_common.h"
#include "common/result.h"

namespace sluice::app {

struct rd_kafka_deleter {
    void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using rd_kafka_handle = std::unique_ptr<rd_kafka_t, rd_kafka_deleter>;

// A producer or consumer for `flags`, with `extra` properties set after the security
// ones (e.g. {"acks", "all"}); `prepare` sets callbacks on the conf before the handle
// is made.
result<rd_kafka_handle> make_rd_kafka(rd_kafka_type_t type, const broker_flags& flags,
                                      const std::vector<std::pair<std::string, std::string>>& extra,
                                      const std::function<void(rd_kafka_conf_t*)>& prepare = {});

// The number of partitions of `topic`; an unknown topic is an error naming it.
result<int32_t> partition_count(rd_kafka_t* rk, const std::string& topic);

}  // namespace sluice::app
