#pragma once

// HTTP routes that change a topic's configs and reset a consumer group's offsets, for
// the web console (docs/console.md); the same checks and effects as Kafka's
// IncrementalAlterConfigs and an OffsetCommit of a group without members:
//   PUT  /v1/topics/NAME/configs         {"set": {"retention.ms": "60000"}, "delete": [...]}
//   POST /v1/groups/GROUP/reset-offsets  {"to": "earliest"|"latest"|"timestamp",
//                                         "timestamp_ms": N, "topic": T (optional)}

namespace sluice::sql {
class http_server;
}
namespace sluice::broker {
class broker;
}

namespace sluice::app {

void add_broker_admin_routes(sql::http_server& server, broker::broker& b);

}  // namespace sluice::app
