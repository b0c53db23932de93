#include "shared/engine_env.h"

#include <cstdlib>

namespace sluice::shared {

namespace {

std::string env(const char* name, const char* fallback = "") {
    const char* v = std::getenv(name);
    return v != nullptr ? v : fallback;
}

void env_ms(const char* name, std::chrono::milliseconds& out) {
    std::string v = env(name);
    if (!v.empty()) out = std::chrono::milliseconds(std::strtoll(v.c_str(), nullptr, 10));
}

}  // namespace

s3_config s3_config_from_env() {
    s3_config c;
    c.endpoint = env("SLUICE_S3_ENDPOINT");
    c.bucket = env("SLUICE_S3_BUCKET");
    c.prefix = env("SLUICE_S3_PREFIX");
    c.region = env("SLUICE_S3_REGION", "us-east-1");
    c.access_key = env("SLUICE_S3_ACCESS_KEY");
    c.secret_key = env("SLUICE_S3_SECRET_KEY");
    env_ms("SLUICE_S3_RETRY_DEADLINE_MS", c.retry_deadline);
    env_ms("SLUICE_S3_REQUEST_TIMEOUT_MS", c.request_timeout);
    c.sign_payload = env("SLUICE_S3_SIGN_PAYLOAD", "1") != "0";
    std::string page = env("SLUICE_S3_LIST_PAGE_SIZE");
    if (!page.empty()) c.list_page_size = static_cast<int>(std::strtol(page.c_str(), nullptr, 10));
    return c;
}

pg_config pg_config_from_env() {
    pg_config c;
    c.url = env("SLUICE_PG_URL");
    env_ms("SLUICE_PG_RETRY_DEADLINE_MS", c.retry_deadline);
    return c;
}

}  // namespace sluice::shared
