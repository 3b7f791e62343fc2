// The S3 client's XML reading (s3_xml.h).
#include "adapters/s3/s3_xml.h"

#include <cstdint>

#include "adapters/s3/s3_text.h"

namespace sedna::s3 {

namespace {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string XmlUnescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out.push_back('&');
      continue;
    }
    const std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") {
      out.push_back('&');
    } else if (ent == "lt") {
      out.push_back('<');
    } else if (ent == "gt") {
      out.push_back('>');
    } else if (ent == "quot") {
      out.push_back('"');
    } else if (ent == "apos") {
      out.push_back('\'');
    } else if (ent.size() > 1 && ent[0] == '#') {
      uint32_t cp = 0;
      const bool hex = ent[1] == 'x' || ent[1] == 'X';
      bool ok = ent.size() > (hex ? 2u : 1u);
      for (char c : ent.substr(hex ? 2 : 1)) {
        const int d = hex ? HexValue(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
        if (d < 0 || cp > 0x10FFFF) {
          ok = false;
          break;
        }
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
      }
      if (!ok || cp > 0x10FFFF) {
        out.append(s.substr(i, semi - i + 1));
      } else {
        AppendUtf8(cp, &out);
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

std::optional<std::string_view> XmlElement(std::string_view xml, std::string_view tag, size_t from,
                                           size_t* end) {
  const std::string open = "<" + std::string(tag);
  const std::string close = "</" + std::string(tag) + ">";
  size_t pos = from;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    const size_t after = pos + open.size();
    if (after >= xml.size()) return std::nullopt;
    const char c = xml[after];
    if (c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      pos = after;
      continue;
    }
    const size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) return std::nullopt;
    if (xml[gt - 1] == '/') {
      if (end != nullptr) *end = gt + 1;
      return std::string_view();
    }
    const size_t stop = xml.find(close, gt + 1);
    if (stop == std::string_view::npos) return std::nullopt;
    if (end != nullptr) *end = stop + close.size();
    return xml.substr(gt + 1, stop - gt - 1);
  }
  return std::nullopt;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  auto e = XmlElement(xml, tag, 0, nullptr);
  return e ? XmlUnescape(*e) : std::string();
}

bool IsErrorDocument(std::string_view body) {
  size_t pos = 0;
  while ((pos = body.find('<', pos)) != std::string_view::npos) {
    if (pos + 1 < body.size() && (body[pos + 1] == '?' || body[pos + 1] == '!')) {
      ++pos;
      continue;
    }
    return body.substr(pos + 1, 5) == "Error" &&
           (pos + 6 >= body.size() || body[pos + 6] == '>' || body[pos + 6] == ' ');
  }
  return false;
}

}  // namespace sedna::s3
