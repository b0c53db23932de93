// The SQLSTATE and the name of each kind of failure (sql/engine.h).

#include "sql/engine.h"

namespace sluice::sql {

const char* sqlstate(failure f) {
    switch (f) {
        case failure::syntax:
            return "42601";
        case failure::undefined_table:
            return "42P01";
        case failure::undefined_column:
            return "42703";
        case failure::read_only:
        case failure::not_authorized:
            return "42501";
        case failure::timeout:  // both are PostgreSQL's query_canceled
        case failure::canceled:
            return "57014";
        case failure::row_limit:
        case failure::program_limit:
            return "54000";
        case failure::memory_limit:
        case failure::memory_exhausted:
            return "53200";
        case failure::temp_exhausted:  // PostgreSQL's temp_file_limit answers it
            return "53400";
        case failure::invalid_parameter:
            return "22023";
        case failure::constraint:
            return "23505";
        case failure::busy:
            return "55P03";
        case failure::disk_full:
            return "53100";
        case failure::shutting_down:
            return "57P01";
        case failure::not_supported:
            return "0A000";
        case failure::internal:
            return "XX000";
    }
    return "XX000";
}

const char* failure_name(failure f) {
    switch (f) {
        case failure::syntax:
            return "syntax";
        case failure::undefined_table:
            return "undefined_table";
        case failure::undefined_column:
            return "undefined_column";
        case failure::read_only:
            return "read_only";
        case failure::not_authorized:
            return "insufficient_privilege";
        case failure::timeout:
            return "timeout";
        case failure::canceled:
            return "canceled";
        case failure::row_limit:
            return "row_limit";
        case failure::program_limit:
            return "program_limit";
        case failure::memory_limit:
            return "memory_limit";
        case failure::memory_exhausted:
            return "memory_exhausted";
        case failure::temp_exhausted:
            return "temp_exhausted";
        case failure::invalid_parameter:
            return "invalid_parameter";
        case failure::constraint:
            return "constraint";
        case failure::busy:
            return "busy";
        case failure::disk_full:
            return "disk_full";
        case failure::shutting_down:
            return "shutting_down";
        case failure::not_supported:
            return "not_supported";
        case failure::internal:
            return "internal";
    }
    return "internal";
}

}  // namespace sluice::sql
