// gMock matchers for Status / StatusOr<T>, shared by every test binary.
//
// StatusIs(code, message): the exact code and the exact message.
// StatusHas(code, substring): the exact code and a message containing it.
// StatusCodeIs(code): the exact code, any message.
// Both print the status they got when they fail. They take anything with
// code() and message(): a Status, or StatusOr<T>::status().
#ifndef DPUAUDIT_TESTS_TESTING_STATUS_MATCHERS_H_
#define DPUAUDIT_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace dpuaudit::testing {

MATCHER_P2(StatusIs, code, message,
           std::string("has status ") + std::string(StatusCodeName(code)) +
               ": " + ::testing::PrintToString(message)) {
  const auto& s = arg;
  if (s.code() != code || s.message() != message) {
    *result_listener << "got " << s.ToString();
    return false;
  }
  return true;
}

MATCHER_P2(StatusHas, code, substring,
           std::string("has status ") + std::string(StatusCodeName(code)) +
               " containing " + ::testing::PrintToString(substring)) {
  const auto& s = arg;
  if (s.code() != code ||
      s.message().find(std::string(substring)) == std::string::npos) {
    *result_listener << "got " << s.ToString();
    return false;
  }
  return true;
}

MATCHER_P(StatusCodeIs, code,
          std::string("has status ") + std::string(StatusCodeName(code))) {
  const auto& s = arg;
  if (s.code() != code) {
    *result_listener << "got " << s.ToString();
    return false;
  }
  return true;
}

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_STATUS_MATCHERS_H_
