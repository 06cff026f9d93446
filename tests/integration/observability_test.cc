// Observability of a real dpuaudit-verifier (issue 15 §3): GET /metrics
// parsed by Debian's python3-prometheus-client, JSON log lines, and the
// audit event file. Real binaries over loopback HTTP; nothing mocked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "apps/shared/http_client.h"
#include "common/files.h"
#include "integration/harness.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using itest::ReadAll;

constexpr const char* kPython = "/usr/bin/python3";
const std::string kAdminToken = "integration-admin-token-0001";
const std::string kFleetToken = "integration-test-bootstrap-token-42";

// Parses exposition text with prometheus_client's own parser and prints
// one JSON array of {"name", "labels", "value"}.
constexpr const char* kParser = R"(
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in family.samples:
        out.append({"family": family.name, "type": family.type, "name": s.name,
                    "labels": s.labels, "value": s.value})
print(json.dumps(out))
)";

class ObservabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-obs-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fleet_file_ = dir_ + "/fleet.token";
    ASSERT_TRUE(
        WriteFileAtomic(fleet_file_, AsBytes(kFleetToken + "\n"), 0600).ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << "\n";
    }
  }

  void StartVerifier(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--policy",
                                     kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", fleet_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    Proc imported = itest::ImportFixtureRefvals(verifier_.url(), admin_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
    auto c = apps::HttpClient::New(verifier_.url(), apps::HttpClientOptions{});
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
  }

  std::string KeyOf(const std::string& node) {
    return dir_ + "/" + node + ".key";
  }

  Proc Enroll(const std::string& node, const std::string& token_file) {
    return Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier",
                 verifier_.url(), "--node-id", node, "--key", KeyOf(node),
                 "--device-root", Fixture("bf3-zero-trust"), "--token-file",
                 token_file});
  }

  // The samples of a scrape, parsed by prometheus_client; GTEST_SKIP-able
  // by the caller when `*skip` is set.
  nlohmann::json ParseWithPrometheusClient(const std::string& text,
                                           std::string* skip) {
    if (access(kPython, X_OK) != 0) {
      *skip = "no /usr/bin/python3 (install python3-prometheus-client)";
      return nullptr;
    }
    Proc probe = Exec({kPython, "-c", "import prometheus_client.parser"});
    if (probe.exit_code != 0) {
      *skip =
          "python3-prometheus-client is not installed (scripts/deps.sh "
          "installs it)";
      return nullptr;
    }
    const std::string file = dir_ + "/scrape.txt";
    EXPECT_TRUE(WriteFileAtomic(file, AsBytes(text), 0600).ok());
    Proc p = Exec({kPython, "-c", kParser, file});
    EXPECT_EQ(p.exit_code, 0) << p.err << "\n" << text;
    nlohmann::json j = nlohmann::json::parse(p.out, nullptr, false);
    EXPECT_TRUE(j.is_array()) << p.out;
    return j;
  }

  std::string dir_, fleet_file_, admin_file_, reader_file_;
  itest::VerifierProcess verifier_;
  std::unique_ptr<apps::HttpClient> client_;
};

// The value of the one sample named `name` with exactly these labels
// (a subset match would hide extra series); -1 when there is none.
double SampleValue(const nlohmann::json& samples, const std::string& name,
                   const nlohmann::json& labels) {
  double found = -1;
  int n = 0;
  for (const auto& s : samples) {
    if (s["name"] == name && s["labels"] == labels) {
      found = s["value"].get<double>();
      ++n;
    }
  }
  EXPECT_LE(n, 1) << name << " " << labels.dump() << " appears more than once";
  return found;
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "not one JSON object: " << line;
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

TEST_F(ObservabilityTest, MetricsAndJsonLogsAfterAdmitRefusalAnd404) {
  StartVerifier({"--log-format", "json"});
  const int64_t started = std::time(nullptr);
  Proc enrolled = Enroll("bf3-zero-trust", fleet_file_);
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.out << enrolled.err;
  const std::string report = dir_ + "/report.jws";
  Proc attested = Exec({kBin + "/dpuaudit-agent", "attest", "--verifier",
                        verifier_.url(), "--node-id", "bf3-zero-trust", "--key",
                        KeyOf("bf3-zero-trust"), "--device-root",
                        Fixture("bf3-zero-trust"), "--report-out", report});
  ASSERT_EQ(attested.exit_code, 0) << attested.out << attested.err;
  // The same report again: its nonce is spent, so it is refused.
  auto replay =
      client_->Post("/v1/reports", "application/jose", ReadAll(report));
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->status, 409) << replay->body;
  auto missing = client_->Get("/no/such/endpoint");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  // A path with quotes, backslashes and an encoded NUL must still log as
  // valid JSON.
  const bool hostile_sent = client_->Get("/x%00\"y\\z").ok();

  // Behind the reader token (the samples name enrolled nodes).
  auto anonymous = client_->Get("/metrics");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->status, 401);
  auto scrape = client_->GetWithBearer("/metrics", itest::kReaderToken);
  ASSERT_TRUE(scrape.ok());
  ASSERT_EQ(scrape->status, 200) << scrape->body;
  EXPECT_THAT(scrape->content_type, HasSubstr("text/plain; version=0.0.4"));

  std::string skip;
  nlohmann::json samples = ParseWithPrometheusClient(scrape->body, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(samples.is_array());
  EXPECT_EQ(
      SampleValue(samples, "dpuaudit_appraisals_total", {{"result", "admit"}}),
      1);
  EXPECT_EQ(
      SampleValue(samples, "dpuaudit_appraisals_total", {{"result", "deny"}}),
      -1);
  EXPECT_EQ(
      SampleValue(samples, "dpuaudit_appraisal_findings_total",
                  {{"rule_id", "host.privilege_level"}, {"verdict", "pass"}}),
      1);
  EXPECT_EQ(SampleValue(samples, "dpuaudit_reports_refused_total",
                        {{"reason", "nonce_used"}}),
            1);
  EXPECT_EQ(SampleValue(samples, "dpuaudit_nonces_issued_total",
                        nlohmann::json::object()),
            1);
  EXPECT_EQ(SampleValue(samples, "dpuaudit_http_requests_total",
                        {{"method", "POST"},
                         {"route", "/v1/reports"},
                         {"code_class", "2xx"}}),
            1);
  EXPECT_EQ(SampleValue(samples, "dpuaudit_http_requests_total",
                        {{"method", "POST"},
                         {"route", "/v1/reports"},
                         {"code_class", "4xx"}}),
            1);
  EXPECT_EQ(SampleValue(
                samples, "dpuaudit_http_requests_total",
                {{"method", "GET"}, {"route", "other"}, {"code_class", "4xx"}}),
            hostile_sent ? 2 : 1);
  EXPECT_EQ(
      SampleValue(
          samples, "dpuaudit_http_requests_total",
          {{"method", "GET"}, {"route", "/metrics"}, {"code_class", "4xx"}}),
      1);
  EXPECT_EQ(SampleValue(samples, "dpuaudit_http_request_duration_seconds_count",
                        {{"method", "POST"}, {"route", "/v1/reports"}}),
            2);
  EXPECT_EQ(SampleValue(
                samples, "dpuaudit_http_request_duration_seconds_bucket",
                {{"method", "POST"}, {"route", "/v1/reports"}, {"le", "+Inf"}}),
            2);
  const double last_admit =
      SampleValue(samples, "dpuaudit_node_last_admit_timestamp_seconds",
                  {{"node_id", "bf3-zero-trust"}});
  EXPECT_GE(last_admit, started - 1);
  EXPECT_LE(last_admit, std::time(nullptr) + 1);
  // Histogram buckets are cumulative: non-decreasing in le order.
  double previous = -1;
  for (const auto& s : samples) {
    if (s["name"] != "dpuaudit_http_request_duration_seconds_bucket" ||
        s["labels"]["route"] != "/v1/reports") {
      continue;
    }
    EXPECT_GE(s["value"].get<double>(), previous);
    previous = s["value"].get<double>();
  }

  // The log: every line one JSON object with ts, level, msg.
  verifier_.Stop();
  const std::string log = ReadAll(verifier_.log());
  std::vector<nlohmann::json> lines = JsonLines(log);
  ASSERT_FALSE(lines.empty());
  int access = 0;
  bool saw_admit = false, saw_404 = false;
  const std::regex hex16("[0-9a-f]{16}");
  for (const auto& j : lines) {
    EXPECT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg"))
        << j.dump();
    if (j.value("msg", "") != "http request") continue;
    ++access;
    EXPECT_TRUE(std::regex_match(j.value("request_id", ""), hex16)) << j.dump();
    for (const char* k :
         {"method", "route", "status", "latency_ms", "client"}) {
      EXPECT_TRUE(j.contains(k)) << k << " missing: " << j.dump();
    }
    EXPECT_EQ(j.value("client", ""), "127.0.0.1");
    if (j.value("route", "") == "/v1/reports" && j.value("status", 0) == 200) {
      EXPECT_EQ(j.value("node_id", ""), "bf3-zero-trust");
      EXPECT_EQ(j.value("decision", ""), "admit");
      saw_admit = true;
    }
    if (j.value("status", 0) == 404) {
      EXPECT_EQ(j.value("route", ""), "other");
      saw_404 = true;
    }
  }
  EXPECT_GE(access, 8);
  EXPECT_TRUE(saw_admit);
  EXPECT_TRUE(saw_404);
  // No secrets: neither bearer token nor the report's bytes.
  EXPECT_THAT(log, Not(HasSubstr(kFleetToken)));
  EXPECT_THAT(log, Not(HasSubstr(kAdminToken)));
  EXPECT_THAT(log, Not(HasSubstr(itest::kReaderToken)));
  EXPECT_THAT(log, Not(HasSubstr(ReadAll(report).substr(0, 40))));
}

TEST_F(ObservabilityTest, RequestIdHeaderMatchesTheAccessLine) {
  StartVerifier({"--log-format", "json", "--public-metrics"});
  Proc curl = Exec({"curl", "-sS", "-D", "-", "-o", "/dev/null",
                    verifier_.url() + "/healthz"});
  ASSERT_EQ(curl.exit_code, 0) << curl.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(curl.out, m,
                                std::regex("X-Request-Id: ([0-9a-f]{16})")))
      << curl.out;
  const std::string id = m[1];
  // --public-metrics: no token needed.
  auto scrape = client_->Get("/metrics");
  ASSERT_TRUE(scrape.ok());
  EXPECT_EQ(scrape->status, 200);
  verifier_.Stop();
  int matching = 0;
  for (const auto& j : JsonLines(ReadAll(verifier_.log()))) {
    if (j.value("request_id", "") == id) {
      ++matching;
      EXPECT_EQ(j.value("route", ""), "/healthz");
      EXPECT_EQ(j.value("status", 0), 200);
    }
  }
  EXPECT_EQ(matching, 1);
}

TEST_F(ObservabilityTest, AuditEventsToFile) {
  const std::string audit = dir_ + "/audit.log";
  StartVerifier({"--audit-log", audit});
  // A per-node token issued by "alice", then an enrollment with it.
  auto issued = client_->PostWithBearer(
      "/v1/enrollment-tokens", "application/json",
      R"({"node_id": "bf3-tok", "by": "alice", "ttl_seconds": 600})",
      kAdminToken);
  ASSERT_TRUE(issued.ok());
  ASSERT_EQ(issued->status, 201) << issued->body;
  nlohmann::json token = nlohmann::json::parse(issued->body);
  const std::string token_file = dir_ + "/bf3-tok.token";
  ASSERT_TRUE(WriteFileAtomic(token_file,
                              AsBytes(token["token"].get<std::string>() + "\n"),
                              0600)
                  .ok());
  Proc enrolled = Enroll("bf3-tok", token_file);
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.out << enrolled.err;
  // A wrong admin token.
  const std::string wrong = "not-the-admin-token-9999";
  auto refused = client_->GetWithBearer("/v1/refvals", wrong);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 401);
  // A revocation by "bob".
  auto revoked = client_->PostWithBearer(
      "/v1/nodes/bf3-tok/revoke", "application/json",
      R"({"by": "bob", "reason": "decommissioned"})", kAdminToken);
  ASSERT_TRUE(revoked.ok());
  ASSERT_EQ(revoked->status, 200) << revoked->body;

  struct stat st {};
  ASSERT_EQ(stat(audit.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string text = ReadAll(audit);
  EXPECT_THAT(text, Not(HasSubstr(wrong)));
  EXPECT_THAT(text, Not(HasSubstr(kAdminToken)));
  EXPECT_THAT(text, Not(HasSubstr(token["token"].get<std::string>())));
  std::vector<nlohmann::json> events = JsonLines(text);
  auto find = [&events](const std::string& event) {
    for (const auto& e : events) {
      if (e.value("event", "") == event) return e;
    }
    ADD_FAILURE() << "no " << event << " event in the audit log";
    return nlohmann::json::object();
  };
  const int64_t now = std::time(nullptr);
  for (const auto& e : events) {
    EXPECT_GT(e.value("at", int64_t{0}), now - 600) << e.dump();
    EXPECT_TRUE(e.value("outcome", "") == "ok" ||
                e.value("outcome", "") == "refused");
  }
  nlohmann::json imported = find("refvals_import");
  EXPECT_EQ(imported.value("actor", ""), "admin");
  EXPECT_EQ(imported.value("outcome", ""), "ok");
  EXPECT_THAT(imported.value("detail", ""), HasSubstr("bf-bundle-2.9.1-40"));

  nlohmann::json issued_event = find("enrollment_token_issued");
  EXPECT_EQ(issued_event.value("actor", ""), "alice");
  EXPECT_EQ(issued_event.value("node_id", ""), "bf3-tok");
  EXPECT_THAT(issued_event.value("detail", ""),
              HasSubstr(token["token_id"].get<std::string>()));
  EXPECT_EQ(issued_event.value("client", ""), "127.0.0.1");
  EXPECT_EQ(issued_event.value("route", ""), "/v1/enrollment-tokens");

  nlohmann::json enrollment = find("enrollment");
  EXPECT_EQ(enrollment.value("actor", ""),
            "token:" + token["token_id"].get<std::string>());
  EXPECT_EQ(enrollment.value("node_id", ""), "bf3-tok");
  EXPECT_EQ(enrollment.value("outcome", ""), "ok");
  EXPECT_THAT(enrollment.value("detail", ""), HasSubstr("approved by token"));
  EXPECT_EQ(find("enrollment_token_used").value("node_id", ""), "bf3-tok");

  nlohmann::json failure = find("auth_failure");
  EXPECT_EQ(failure.value("actor", ""), "anonymous");
  EXPECT_EQ(failure.value("outcome", ""), "refused");
  EXPECT_EQ(failure.value("route", ""), "/v1/refvals");
  EXPECT_EQ(failure.value("client", ""), "127.0.0.1");
  EXPECT_THAT(failure.value("detail", ""), HasSubstr("wrong bearer token"));

  nlohmann::json revocation = find("revocation");
  EXPECT_EQ(revocation.value("actor", ""), "bob");
  EXPECT_EQ(revocation.value("node_id", ""), "bf3-tok");
  EXPECT_EQ(revocation.value("outcome", ""), "ok");
}

TEST_F(ObservabilityTest, AuditLogThatCannotBeOpenedStopsTheStart) {
  std::string err;
  itest::VerifierProcess v;
  EXPECT_FALSE(v.Start(dir_,
                       {"--policy", kSrc + "/policies/zero-trust.json",
                        "--audit-log", dir_ + "/no/such/dir/audit.log"},
                       &err));
  EXPECT_EQ(v.exit_code(), 2);
  EXPECT_THAT(ReadAll(v.log()), HasSubstr("--audit-log"));
}

}  // namespace
}  // namespace dpuaudit
