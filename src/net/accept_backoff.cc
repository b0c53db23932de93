#include "net/accept_backoff.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace sluice::net {

bool accept_backoff::is_resource_error(int err) {
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

void accept_backoff::failed(int err) {
    ++_failures;
    ++_unlogged;
    if (uint64_t ignored = 0; !_log.allow(ignored)) return;
    const uint64_t quiet = _unlogged - 1;
    _unlogged = 0;
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    log_warn("net",
             "{}: accept: {} (descriptor limit {}); pausing accepts for {} ms at a time until "
             "it succeeds ({} failed accepts since the last line)",
             _what, std::strerror(err), static_cast<uint64_t>(rl.rlim_cur), pause.count(), quiet);
}

void accept_backoff::succeeded() {
    if (_failures == 0) return;
    const uint64_t n = _failures;
    _failures = 0;
    if (uint64_t ignored = 0; _log.allow(ignored))
        log_info("net", "{}: accepting connections again after {} failed accepts", _what, n);
}

}  // namespace sluice::net
