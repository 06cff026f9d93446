// The relying party's gate against the real binaries (issue 12, items 1 and
// 17): `dpuaudit admit` trusts only pinned verifier keys, never a key served
// by the verifier it is checking; plain HTTP off loopback is refused before
// any connection; forged-time, wrong-node and wrong-verifier EARs are
// denied with their reason; node state needs the reader token; the verifier
// refuses loose token files and plain HTTP on a non-loopback address.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "report/ear.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using itest::Exec;
using itest::kBin;
using itest::kSrc;
using itest::Proc;

constexpr char kBootstrap[] = "admit-gate-bootstrap-token-01";
constexpr char kNode[] = "gate-node";

// One real verifier in its own folder, with the admin and reader tokens,
// the fixture reference values, and `kNode` enrolled and admitted.
struct Site {
  std::string dir, bootstrap_file, admin_file, reader_file, jwks;
  itest::VerifierProcess verifier;

  ::testing::AssertionResult Start(const std::string& d, const std::string& verifier_id,
                                   std::vector<std::string> extra = {}) {
    dir = d;
    fs::create_directories(dir);
    bootstrap_file = dir + "/bootstrap.token";
    if (!WriteFileAtomic(bootstrap_file, AsBytes(std::string(kBootstrap) + "\n"), 0600).ok()) {
      return ::testing::AssertionFailure() << "cannot write " << bootstrap_file;
    }
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", bootstrap_file,
                                     "--verifier-id", verifier_id};
    for (auto& f : itest::AdminFlags(dir, &admin_file)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir, &reader_file)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    if (!verifier.Start(dir, args, &err)) return ::testing::AssertionFailure() << err;
    jwks = itest::ExportJwks(dir + "/verifier.key", dir + "/jwks.json");
    if (jwks.empty()) return ::testing::AssertionFailure() << "no JWKS";
    Proc imported = itest::ImportFixtureRefvals(verifier.url(), admin_file);
    if (imported.exit_code != 0) return ::testing::AssertionFailure() << imported.err;
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult EnrollAndAttest() {
    std::vector<std::string> net = {"--verifier", verifier.url(), "--node-id", kNode,
                                    "--key", dir + "/agent.key"};
    std::vector<std::string> enroll = {kBin + "/dpuaudit-agent", "enroll",
                                       "--bootstrap-token-file", bootstrap_file};
    enroll.insert(enroll.end(), net.begin(), net.end());
    Proc e = Exec(enroll);
    if (e.exit_code != 0) return ::testing::AssertionFailure() << e.out << e.err;
    std::vector<std::string> attest = {kBin + "/dpuaudit-agent", "attest", "--device-root",
                                       itest::Fixture("bf3-zero-trust")};
    attest.insert(attest.end(), net.begin(), net.end());
    Proc a = Exec(attest);
    if (a.exit_code != 0 || a.out.find(std::string(kNode) + ": admit") == std::string::npos) {
      return ::testing::AssertionFailure() << a.out << a.err;
    }
    return ::testing::AssertionSuccess();
  }

  std::string Kid() {
    auto j = nlohmann::json::parse(itest::ReadAll(jwks), nullptr, false);
    return j.is_discarded() ? "" : j["keys"][0].value("kid", "");
  }

  apps::HttpResponse Get(const std::string& path, const std::string& bearer) {
    auto c = apps::HttpClient::New(verifier.url(), {});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    auto r = (*c)->GetWithBearer(path, bearer);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
};

class AdmitGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-gate-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  Proc Admit(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kBin + "/dpuaudit", "admit", "--node", kNode};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }

  std::string dir_;
};

// (a) Issue 12's attack: a second, real verifier B with its own key, the
// same node id enrolled and admitted there. With A's key pinned, B's admit
// is refused (1); with B's key pinned it is accepted (0), so the test can
// tell the two apart.
TEST_F(AdmitGateTest, FakeVerifierThatServesItsOwnKeyIsNotTrusted) {
  Site a, b;
  ASSERT_TRUE(a.Start(dir_ + "/a", "verifier-a"));
  ASSERT_TRUE(b.Start(dir_ + "/b", "verifier-b"));
  ASSERT_TRUE(a.EnrollAndAttest());
  ASSERT_TRUE(b.EnrollAndAttest());
  ASSERT_NE(a.Kid(), b.Kid());

  Proc fake = Admit({"--verifier", b.verifier.url(), "--jwks", a.jwks, "--token-file",
                     b.reader_file});
  EXPECT_EQ(fake.exit_code, 1) << fake.out << fake.err;
  EXPECT_THAT(fake.out, HasSubstr(std::string(kNode) + ": deny — EAR rejected: EAR key id \"" +
                                  b.Kid() + "\" is not pinned"));
  Proc control = Admit({"--verifier", b.verifier.url(), "--jwks", b.jwks, "--token-file",
                        b.reader_file});
  EXPECT_EQ(control.exit_code, 0) << control.out << control.err;
  EXPECT_THAT(control.out, HasSubstr("admit (EAR verified with pinned key " + b.Kid()));
  Proc real = Admit({"--verifier", a.verifier.url(), "--jwks", a.jwks, "--token-file",
                     a.reader_file, "--json"});
  EXPECT_EQ(real.exit_code, 0) << real.out << real.err;
  auto j = nlohmann::json::parse(real.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << real.out;
  EXPECT_EQ(j["decision"], "admit");
  EXPECT_EQ(j["verified"], true);
  EXPECT_EQ(j["verifier_id"], "verifier-a");

  // Nothing pinned: refuses to run and says how to pin.
  Proc unpinned = Admit({"--verifier", a.verifier.url(), "--token-file", a.reader_file,
                         "--trust-file", dir_ + "/absent-trust.json"});
  EXPECT_EQ(unpinned.exit_code, 2);
  EXPECT_THAT(unpinned.err, HasSubstr("no verifier key is pinned"));
  EXPECT_THAT(unpinned.err, HasSubstr("dpuaudit trust add"));

  // The trust store: pinning from a URL needs the confirmed thumbprint, and
  // B cannot pass A's thumbprint off for its own key.
  std::string trust = dir_ + "/trust.json";
  Proc no_fp = Exec({kBin + "/dpuaudit", "trust", "add", "--verifier", b.verifier.url(),
                     "--trust-file", trust});
  EXPECT_EQ(no_fp.exit_code, 2);
  EXPECT_THAT(no_fp.err, HasSubstr("needs --fingerprint"));
  Proc wrong_fp = Exec({kBin + "/dpuaudit", "trust", "add", "--verifier", b.verifier.url(),
                        "--fingerprint", a.Kid(), "--trust-file", trust});
  EXPECT_EQ(wrong_fp.exit_code, 1);
  EXPECT_THAT(wrong_fp.err, HasSubstr("no key at " + b.verifier.url() + " has thumbprint " +
                                      a.Kid()));
  EXPECT_FALSE(fs::exists(trust));
  Proc pinned = Exec({kBin + "/dpuaudit", "trust", "add", "--verifier", a.verifier.url(),
                      "--fingerprint", a.Kid(), "--trust-file", trust});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_THAT(pinned.out, HasSubstr("pinned  kid " + a.Kid() + "  thumbprint " + a.Kid()));
  struct stat st {};
  ASSERT_EQ(::stat(trust.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Proc list = Exec({kBin + "/dpuaudit", "trust", "list", "--json", "--trust-file", trust});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["keys"][0]["thumbprint"], a.Kid());
  EXPECT_EQ(Admit({"--verifier", a.verifier.url(), "--token-file", a.reader_file,
                   "--trust-file", trust}).exit_code, 0);
  EXPECT_EQ(Admit({"--verifier", b.verifier.url(), "--token-file", b.reader_file,
                   "--trust-file", trust}).exit_code, 1);
  // "--" before the kid: one in 64 base64url thumbprints starts with '-'.
  Proc removed = Exec({kBin + "/dpuaudit", "trust", "remove", "--trust-file", trust, "--", a.Kid()});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(Admit({"--verifier", a.verifier.url(), "--token-file", a.reader_file,
                   "--trust-file", trust}).exit_code, 2);
}

// A non-loopback IPv4 address of this machine, or "" if it has none.
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) found = buf;
  }
  freeifaddrs(list);
  return found;
}

// A TCP listener that counts the connections made to it (and closes them).
class CountingListener {
 public:
  bool Listen(const std::string& addr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) return false;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return false;
    if (::listen(fd_, 16) != 0) return false;
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) {
          int c = ::accept(fd_, nullptr, nullptr);
          if (c >= 0) {
            ++accepted_;
            ::close(c);
          }
        }
      }
    });
    return true;
  }
  ~CountingListener() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// (b) http:// to a non-loopback address: refused (2) by the CLI and the
// agent before any connection is made; --insecure-http lets it through.
TEST_F(AdmitGateTest, PlainHttpOffLoopbackIsRefusedBeforeAnyConnection) {
  std::string addr = NonLoopbackAddress();
  if (addr.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address";
  CountingListener listener;
  ASSERT_TRUE(listener.Listen(addr)) << addr;
  std::string url = "http://" + addr + ":" + std::to_string(listener.port());
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  std::string pem = dir_ + "/verifier.pub.pem";
  ASSERT_TRUE(WriteFileAtomic(pem, AsBytes(key->public_key().ToPem()), 0644).ok());

  auto t0 = std::chrono::steady_clock::now();
  Proc admit = Admit({"--verifier", url, "--verifier-key", pem});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(admit.exit_code, 2) << admit.out << admit.err;
  EXPECT_THAT(admit.err, HasSubstr("refusing plain http:// to " + addr +
                                   ", which is not a loopback address"));
  Proc agent = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", url, "--node-id", kNode,
                     "--key", dir_ + "/agent.key"});
  EXPECT_EQ(agent.exit_code, 2) << agent.out << agent.err;
  EXPECT_THAT(agent.err, HasSubstr("refusing plain http://"));
  Proc trust = Exec({kBin + "/dpuaudit", "trust", "add", "--verifier", url, "--fingerprint",
                     "x", "--trust-file", dir_ + "/trust.json"});
  EXPECT_EQ(trust.exit_code, 2);
  EXPECT_THAT(trust.err, HasSubstr("refusing plain http://"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(listener.accepted(), 0) << "a refused client still connected";
  std::printf("admit refused http://%s in %lld ms, with no connection made\n", addr.c_str(),
              static_cast<long long>(ms));

  // The opt-in connects (and fails on the listener's empty answer): so the
  // count above would have seen a connection.
  Proc insecure = Admit({"--verifier", url, "--verifier-key", pem, "--insecure-http"});
  EXPECT_EQ(insecure.exit_code, 2) << insecure.out << insecure.err;
  EXPECT_THAT(insecure.err, Not(HasSubstr("refusing plain http://")));
  for (int i = 0; i < 40 && listener.accepted() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(listener.accepted(), 1);
}

report::AttestationResult GateEar(const std::string& node, int64_t iat, int64_t ttl,
                                  const std::string& verifier_id) {
  report::AttestationResult ar;
  ar.iat = iat;
  ar.exp = iat + ttl;
  ar.nonce = Base64UrlEncode(Bytes(32, 0x33));
  ar.verifier_id = {"dpuaudit", "dpuaudit-verifier test", verifier_id};
  report::Submod posture;
  posture.status = report::ArStatus::kAffirming;
  posture.trust_vector.configuration = 2;
  ar.submods["posture"] = posture;
  ar.dpuaudit.node_id = node;
  ar.dpuaudit.decision = report::Decision::kAdmit;
  ar.dpuaudit.report_sha256 = std::string(64, 'c');
  ar.dpuaudit.policy = {"zero-trust", std::string(64, 'd')};
  return ar;
}

// (c) EARs signed with the PINNED key but wrong in time, node or verifier:
// each exits 1 with its reason; the same key's good EAR exits 0.
TEST_F(AdmitGateTest, FutureExpiredOtherNodeAndOtherVerifierEarsAreDenied) {
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  auto signer = Es256Signer::New(*key);
  ASSERT_TRUE(signer.ok());
  std::string kid = key->public_key().Thumbprint();
  std::string pem = dir_ + "/verifier.pub.pem";
  ASSERT_TRUE(WriteFileAtomic(pem, AsBytes(key->public_key().ToPem()), 0644).ok());
  int64_t now = std::time(nullptr);
  struct Case {
    const char* name;
    report::AttestationResult ear;
    std::string reason;
    int exit_code;
  };
  const Case cases[] = {
      {"good", GateEar(kNode, now, 600, "verifier-a"), "", 0},
      {"iat in the future", GateEar(kNode, now + 3600, 600, "verifier-a"),
       "s in the future (now ", 1},
      {"exp past", GateEar(kNode, now - 1200, 600, "verifier-a"), "EAR expired at ", 1},
      {"another node", GateEar("other-node", now, 600, "verifier-a"),
       "EAR is for node \"other-node\", not \"gate-node\".", 1},
      {"another verifier", GateEar(kNode, now, 600, "verifier-b"),
       "EAR is from verifier \"verifier-b\", not \"verifier-a\".", 1},
      {"no verifier id", GateEar(kNode, now, 600, ""), "EAR names no verifier id", 1},
  };
  int i = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto jwt = report::SignEar(c.ear, **signer, kid);
    ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
    std::string file = dir_ + "/ear-" + std::to_string(i++) + ".jwt";
    ASSERT_TRUE(WriteFileAtomic(file, AsBytes(*jwt), 0644).ok());
    Proc p = Admit({"--ear", file, "--verifier-key", pem, "--verifier-id", "verifier-a"});
    EXPECT_EQ(p.exit_code, c.exit_code) << p.out << p.err;
    if (c.exit_code == 1) {
      EXPECT_THAT(p.out, HasSubstr("gate-node: deny — EAR rejected: "));
      EXPECT_THAT(p.out, HasSubstr(c.reason));
    } else {
      EXPECT_THAT(p.out, HasSubstr("gate-node: admit (EAR verified with pinned key " + kid));
    }
  }
}

// (d) Node state needs the reader (or admin) token; --public-admission
// opens only the admission route.
TEST_F(AdmitGateTest, NodeStateNeedsTheReaderTokenAndPublicAdmissionIsExplicit) {
  Site a;
  ASSERT_TRUE(a.Start(dir_ + "/a", "verifier-a"));
  ASSERT_TRUE(a.EnrollAndAttest());
  const std::string view = std::string("/v1/nodes/") + kNode;
  const std::string adm = view + "/admission";
  for (const std::string& path : {view, adm}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(a.Get(path, "").status, 401);
    EXPECT_EQ(a.Get(path, kBootstrap).status, 401);
    EXPECT_EQ(a.Get(path, "wrong-reader-token-000000").status, 401);
    EXPECT_THAT(a.Get(path, "").body, HasSubstr("reader (or admin) bearer token"));
    EXPECT_EQ(a.Get(path, itest::kReaderToken).status, 200);
    EXPECT_EQ(a.Get(path, "integration-admin-token-0001").status, 200);
  }
  // Unknown node ids learn nothing without a token either.
  EXPECT_EQ(a.Get("/v1/nodes/no-such-node", "").status, 401);
  Proc no_token = Admit({"--verifier", a.verifier.url(), "--jwks", a.jwks});
  EXPECT_EQ(no_token.exit_code, 2);
  EXPECT_THAT(no_token.err, HasSubstr("give --token-file with the verifier's reader token"));
  a.verifier.Stop();

  Site pub;
  ASSERT_TRUE(pub.Start(dir_ + "/pub", "verifier-p", {"--public-admission"}));
  ASSERT_TRUE(pub.EnrollAndAttest());
  EXPECT_EQ(pub.Get(adm, "").status, 200);
  EXPECT_EQ(pub.Get(view, "").status, 401);
  EXPECT_EQ(pub.Get(view, itest::kReaderToken).status, 200);
  EXPECT_THAT(itest::ReadAll(pub.verifier.log()), HasSubstr("--public-admission"));
  Proc open = Admit({"--verifier", pub.verifier.url(), "--jwks", pub.jwks});
  EXPECT_EQ(open.exit_code, 0) << open.out << open.err;
}

// (e) The verifier refuses token files others can read, and plain HTTP on a
// non-loopback address unless --insecure-http (then it warns loudly); the
// agent and the CLI refuse loose token files too.
TEST_F(AdmitGateTest, VerifierRefusesLooseTokenFilesAndPlainHttpOffLoopback) {
  std::string good = dir_ + "/good.token", loose = dir_ + "/loose.token";
  ASSERT_TRUE(WriteFileAtomic(good, AsBytes(std::string("a-good-token-0123456789\n")), 0600).ok());
  ASSERT_TRUE(WriteFileAtomic(loose, AsBytes(std::string("a-loose-token-0123456789\n")), 0644).ok());
  std::vector<std::string> base = {kBin + "/dpuaudit-verifier", "serve", "--db",
                                   dir_ + "/v.db", "--key", dir_ + "/v.key", "--policy",
                                   kSrc + "/policies/zero-trust.json", "--listen",
                                   "127.0.0.1:0"};
  for (const char* flag : {"--reader-token-file", "--admin-token-file", "--bootstrap-token-file"}) {
    SCOPED_TRACE(flag);
    std::vector<std::string> argv = base;
    argv.push_back(flag);
    argv.push_back(loose);
    Proc p = Exec(argv);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_THAT(p.err, HasSubstr("token file " + loose +
                                 " is readable or writable by group or others (mode 0644); "
                                 "chmod 600 it."));
  }
  Proc agent = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", "http://127.0.0.1:1",
                     "--node-id", kNode, "--key", dir_ + "/agent.key",
                     "--bootstrap-token-file", loose});
  EXPECT_EQ(agent.exit_code, 2);
  EXPECT_THAT(agent.err, HasSubstr("chmod 600 it"));
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  std::string pem = dir_ + "/verifier.pub.pem";
  ASSERT_TRUE(WriteFileAtomic(pem, AsBytes(key->public_key().ToPem()), 0644).ok());
  Proc cli = Admit({"--verifier", "http://127.0.0.1:1", "--verifier-key", pem, "--token-file",
                    loose});
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_THAT(cli.err, HasSubstr("reader token file " + loose + " is readable or writable"));
  Proc refvals = Exec({kBin + "/dpuaudit", "refvals", "list", "--verifier", "http://127.0.0.1:1",
                       "--admin-token-file", loose});
  EXPECT_EQ(refvals.exit_code, 2);
  EXPECT_THAT(refvals.err, HasSubstr("chmod 600 it"));

  // 0.0.0.0 without TLS: refused, with the way out.
  std::vector<std::string> any = {kBin + "/dpuaudit-verifier", "serve", "--db", dir_ + "/v.db",
                                  "--key", dir_ + "/v.key", "--policy",
                                  kSrc + "/policies/zero-trust.json", "--listen", "0.0.0.0:0"};
  Proc refused = Exec(any);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("refusing to listen on 0.0.0.0:0 without TLS"));
  EXPECT_THAT(refused.err, HasSubstr("--insecure-http"));
  fs::create_directories(dir_ + "/insecure");
  itest::VerifierProcess v;
  std::string err;
  ASSERT_TRUE(v.Start(dir_ + "/insecure",
                      {"--policy", kSrc + "/policies/zero-trust.json", "--insecure-http"}, &err,
                      "0.0.0.0:0"))
      << err;
  EXPECT_TRUE(v.Alive());
  EXPECT_THAT(itest::ReadAll(v.log()), HasSubstr("INSECURE: --insecure-http: serving plain "
                                                 "HTTP on non-loopback"));
}

}  // namespace
}  // namespace dpuaudit
