#pragma once

// The few pieces of S3's XML answers the client reads (ListObjectsV2 results and error
// bodies). Their shape is fixed by the S3 API, so a scan for elements by name does: no
// attributes, namespaces or nesting beyond <Contents> are needed.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::shared::s3_xml {

// The text of the first <tag>...</tag> in `xml`, entities decoded; "" when absent.
std::string first_text(std::string_view xml, std::string_view tag);

// The inner XML of every <tag>...</tag> in `xml`, in order.
std::vector<std::string_view> elements(std::string_view xml, std::string_view tag);

// An ISO 8601 time as S3 writes it ("2026-12-06T14:12:27.000Z"), in ms since the epoch;
// -1 when it does not parse.
int64_t parse_time_ms(std::string_view text);

// Decodes the five predefined entities and numeric character references.
std::string decode_entities(std::string_view text);

}  // namespace sluice::shared::s3_xml
