// The few S3 XML answers the client reads (error documents, CopyObject and ListObjectsV2
// results): element lookup and entity decoding, no DTDs, CDATA or namespace prefixes. Not for the
// client's users.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sedna::s3 {

// `s` with XML's character references and the five predefined entities decoded.
std::string XmlUnescape(std::string_view s);
// The raw content of the first <tag>…</tag> (or <tag/>) at or after `from`; *end is set past it.
std::optional<std::string_view> XmlElement(std::string_view xml, std::string_view tag, size_t from,
                                           size_t* end);
// The unescaped text of the first <tag>, "" when there is none.
std::string XmlText(std::string_view xml, std::string_view tag);
// The document's root element is <Error> (S3 may answer 200 to CopyObject with one).
bool IsErrorDocument(std::string_view body);

}  // namespace sedna::s3
