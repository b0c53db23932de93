#include "broker/api_table.h"

#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

using protocol::api_key;

// Versions: Kafka's clients pick the highest version both sides know; the lower bounds
// reach back to what librdkafka 2.0, kafka-python 2.0 and kafkajs 2.2 still send.
constexpr api_def table[] = {
    {api_key::produce, "Produce", 3, 9, handle_produce},
    {api_key::fetch, "Fetch", 4, 13, handle_fetch},
    {api_key::list_offsets, "ListOffsets", 0, 8, handle_list_offsets},
    {api_key::metadata, "Metadata", 0, 12, handle_metadata},
    {api_key::describe_configs, "DescribeConfigs", 0, 4, handle_describe_configs},
    {api_key::api_versions, "ApiVersions", 0, 3, handle_api_versions},
    {api_key::create_topics, "CreateTopics", 0, 7, handle_create_topics},
    {api_key::delete_topics, "DeleteTopics", 0, 6, handle_delete_topics},
    {api_key::describe_cluster, "DescribeCluster", 0, 1, handle_describe_cluster},
};

}  // namespace

std::span<const api_def> supported_apis() { return table; }

const api_def* find_api(int16_t key) {
    for (const auto& d : table)
        if (static_cast<int16_t>(d.key) == key) return &d;
    return nullptr;
}

}  // namespace sluice::broker
