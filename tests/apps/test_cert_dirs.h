// Two throw-away certificate sets for TLS tests: certs/make-test-certs.sh
// run into <tmp>/a and <tmp>/b (each a CA, a server certificate for
// 127.0.0.1/localhost and its key), made once per test suite and removed
// after it. Derived is the fixture (one directory per fixture).
#ifndef DPUAUDIT_TESTS_APPS_TEST_CERT_DIRS_H_
#define DPUAUDIT_TESTS_APPS_TEST_CERT_DIRS_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/files.h"

namespace dpuaudit::apps {

template <typename Derived, typename Base = ::testing::Test>
class WithTestCertDirs : public Base {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/dpuaudit-certs-XXXXXX";
    char* made = mkdtemp(tmpl);
    ASSERT_NE(made, nullptr);
    dir_ = made;
    for (const char* n : {"a", "b"}) {
      std::string cmd = "/bin/bash " + std::string(DPUAUDIT_SOURCE_DIR) +
                        "/certs/make-test-certs.sh " + dir_ + "/" + n + " > /dev/null";
      ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  // "a/server.pem" -> its contents ("" when unreadable).
  static std::string Read(const std::string& name) {
    auto b = ReadFileLimited(dir_ + "/" + name, 1 << 20);
    return b.ok() ? ToString(*b) : "";
  }
  static std::string Path(const std::string& name) { return dir_ + "/" + name; }

  static inline std::string dir_;
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_TESTS_APPS_TEST_CERT_DIRS_H_
