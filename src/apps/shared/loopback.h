// Which hosts count as loopback, shared by the HTTP client (plain http://
// only to loopback) and the verifier's server (plain HTTP only on loopback).
// Pure: no name is resolved, no socket opened.
#ifndef DPUAUDIT_APPS_SHARED_LOOPBACK_H_
#define DPUAUDIT_APPS_SHARED_LOOPBACK_H_

#include <string>
#include <string_view>

namespace dpuaudit::apps {

// "localhost", 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104, written as
// literals (a name other than "localhost" is never resolved to decide).
bool IsLoopbackHost(std::string_view host);
// The host of "scheme://host[:port][/…]" ("[v6]" unbracketed); "" if none.
std::string UrlHost(std::string_view url);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_LOOPBACK_H_
