#pragma once

// sluice_authentication_failures_total{listener, mechanism}: failed logins on any
// listener (a Kafka listener's address, "http" or "pg"), for the metrics registry.

#include <string_view>

namespace sluice::security {

// Makes the family known before the first failure.
void declare_metrics();

void count_authentication_failure(std::string_view listener, std::string_view mechanism);

}  // namespace sluice::security
