#include "security/auth_metrics.h"

#include <string>

#include "metrics/registry.h"

namespace sluice::security {
namespace {

metrics::family<metrics::counter>& failures() {
    static auto& f = metrics::global().counters(
        "sluice_authentication_failures_total",
        "Failed logins, by listener (a Kafka listener, http or pg) and mechanism",
        {"listener", "mechanism"});
    return f;
}

}  // namespace

void declare_metrics() { (void)failures(); }

void count_authentication_failure(std::string_view listener, std::string_view mechanism) {
    failures().with({std::string(listener), std::string(mechanism)}).inc();
}

}  // namespace sluice::security
