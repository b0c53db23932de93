// The expansions' error families (expansion/target_store.h, docs/operations.md).

#include "expansion/target_store.h"
#include "metrics/registry.h"

namespace sluice::expansion {

namespace {

struct error_counters {
    metrics::counter& parse;
    metrics::counter& types;
};

const error_counters& expansion_errors() {
    static const error_counters c{
        metrics::global().counter_of(
            "sluice_expansion_parse_errors_total",
            "Events an expansion could not parse (rows with _parse_error set)"),
        metrics::global().counter_of(
            "sluice_expansion_type_errors_total",
            "Fields an expansion found of the wrong type (the rows' _type_errors, added up)"),
    };
    return c;
}

}  // namespace

void declare_metrics() {
    (void)expansion_errors();
}

// Events expanded with an error flagged in their row (docs/operations.md). A transaction
// rolled back and written again counts its rows again.
void count_expansion_errors(bool parse_error, int64_t type_errors) {
    if (parse_error) expansion_errors().parse.inc();
    if (type_errors > 0) expansion_errors().types.inc(static_cast<uint64_t>(type_errors));
}

}  // namespace sluice::expansion
