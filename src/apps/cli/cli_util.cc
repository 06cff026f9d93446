#include "apps/cli/cli_util.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/shared/utc_time.h"
#include "common/bytes.h"
#include "common/files.h"
#include "report/claims.h"
#include "report/jws.h"

namespace dpuaudit::apps {

Status CheckJwsKind(std::string_view jws, JwsKind expected, const std::string& file) {
  auto header = report::PeekUnverifiedHeader(jws);
  if (!header.ok()) return OkStatus();
  std::string typ = header->typ;
  for (char& c : typ) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (typ.rfind("application/", 0) == 0) typ = typ.substr(12);
  const std::string name = file == "-" ? "stdin" : file;
  const bool is_report = typ == report::kReportJwsTyp;
  const bool is_result = typ == "jwt";
  if (expected == JwsKind::kResult && is_report) {
    return InvalidArgumentError(name + " is a signed attestation report (typ " + header->typ +
                                "), not a result: read it with `dpuaudit report show " + name +
                                "`.");
  }
  if (expected == JwsKind::kReport && is_result) {
    return InvalidArgumentError(name + " is an attestation result (EAR, typ " + header->typ +
                                "), not a report: read it with `dpuaudit result show " + name +
                                "`.");
  }
  return OkStatus();
}

int Fail(const Status& s) {
  std::cerr << "dpuaudit: " << s.message() << "\n";
  return kExitError;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

StatusOr<Bytes> ReadBytes(const std::string& path, size_t max_bytes) {
  if (path != "-") return ReadFileLimited(path, max_bytes);
  Bytes out;
  char buf[65536];
  while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
    out.insert(out.end(), buf, buf + std::cin.gcount());
    if (out.size() > max_bytes) {
      return ResourceExhaustedError("stdin is larger than the limit of " +
                                    std::to_string(max_bytes) + " bytes.");
    }
  }
  return out;
}

StatusOr<std::string> ReadText(const std::string& path) {
  if (path == "-") {
    std::string text;
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      text.append(buf, static_cast<size_t>(std::cin.gcount()));
      if (text.size() > kMaxCliFileBytes) {
        return ResourceExhaustedError("stdin is larger than the limit of " +
                                      std::to_string(kMaxCliFileBytes) + " bytes.");
      }
    }
    return Trim(text);
  }
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadFileLimited(path, kMaxCliFileBytes));
  return Trim(ToString(b));
}

std::string TimeString(int64_t t) {
  return UtcTime(t, "%Y-%m-%dT%H:%M:%SZ") + " (" + std::to_string(t) + ")";
}

StatusOr<Bytes> UnverifiedJwsPayload(std::string_view jws) {
  if (!jws.empty() && jws.front() == '{') {
    auto j = nlohmann::json::parse(jws, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("payload") ||
        !j["payload"].is_string()) {
      return InvalidArgumentError("flattened JWS has no payload.");
    }
    return Base64UrlDecode(j["payload"].get<std::string>());
  }
  size_t a = jws.find('.');
  size_t b = a == std::string_view::npos ? a : jws.find('.', a + 1);
  if (b == std::string_view::npos) {
    return InvalidArgumentError("not a JWS (needs 3 dot-separated parts).");
  }
  return Base64UrlDecode(jws.substr(a + 1, b - a - 1));
}

std::string Wrap(std::string_view text, size_t width, std::string_view first,
                 std::string_view next) {
  std::string out;
  std::string line(first);
  bool empty = true;  // no word on `line` yet
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) break;
    while (!word.empty()) {
      const size_t need = word.size() + (empty ? 0 : 1);
      if (line.size() + need <= width) {
        if (!empty) line += ' ';
        line += word;
        empty = false;
        word = {};
      } else if (!empty) {
        out += line + "\n";
        line = std::string(next);
        empty = true;
      } else {
        // A word longer than a whole line: cut it.
        const size_t room = width > line.size() ? width - line.size() : 1;
        line += word.substr(0, room);
        word.remove_prefix(std::min(room, word.size()));
        out += line + "\n";
        line = std::string(next);
      }
    }
  }
  if (!empty) out += line + "\n";
  return out;
}

size_t DisplayWidth(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string FitLines(std::string_view text, size_t width) {
  std::string out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (DisplayWidth(line) <= width) {
      out.append(line);
      out += "\n";
      continue;
    }
    const size_t indent = std::min(line.find_first_not_of(' '), width / 2);
    const std::string first(indent, ' ');
    out += Wrap(line.substr(indent), width, first, std::string(indent + 4, ' '));
  }
  return out;
}

}  // namespace dpuaudit::apps
