// DICE chains and evidence extensions (dice.h).
#include "spdm/dice.h"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include <algorithm>
#include <utility>

#include "common/crypto.h"

namespace dpuaudit::spdm {
namespace {

// The TCG DICE extensions (TCG DICE Attestation Architecture; tcg-dice arc
// 2.23.133.5.4): which we read as evidence, and which we only tolerate as
// critical (the UEID names the device; it carries no measurement).
struct DiceOid {
  std::string_view oid;
  bool evidence;
};
constexpr DiceOid kDiceOids[] = {
    {"2.23.133.5.4.1", true},    // DiceTcbInfo (BlueField-3 and ERoTs: FWIDs)
    {"2.23.133.5.4.1.1", true},  // GPU IRoT chains: a DiceTcbInfo
    {"2.23.133.5.4.5", true},    // DiceMultiTcbInfo
    {"2.23.133.5.4.4", false},   // UEID
};
constexpr std::string_view kOidMultiTcbInfo = "2.23.133.5.4.5";

const DiceOid* FindDiceOid(std::string_view oid) {
  for (const DiceOid& d : kDiceOids) {
    if (d.oid == oid) return &d;
  }
  return nullptr;
}

bool IsDiceOid(std::string_view oid) { return FindDiceOid(oid) != nullptr; }

// One DER element: its tag, class and contents. OpenSSL's ASN1_get_object
// does the length decoding (definite lengths only, bounded by `in`).
struct Tlv {
  int tag = 0;
  int cls = 0;
  bool constructed = false;
  ByteView contents;
};

class DerReader {
 public:
  DerReader(ByteView in, std::string what) : in_(in), what_(std::move(what)) {}
  bool empty() const { return in_.empty(); }
  size_t offset() const { return consumed_; }

  StatusOr<Tlv> Next() {
    const unsigned char* p = in_.data();
    long len = 0;
    int tag = 0, cls = 0;
    const int rc = ASN1_get_object(&p, &len, &tag, &cls, static_cast<long>(in_.size()));
    if ((rc & 0x80) != 0 || rc == 0x21) {  // error, or indefinite length
      ERR_clear_error();
      return InvalidArgumentError(what_ + ": malformed DER at byte " +
                                  std::to_string(consumed_));
    }
    const size_t header = static_cast<size_t>(p - in_.data());
    if (len < 0 || header + static_cast<size_t>(len) > in_.size()) {
      return InvalidArgumentError(what_ + ": DER length overruns at byte " +
                                  std::to_string(consumed_));
    }
    Tlv t;
    t.tag = tag;
    t.cls = cls;
    t.constructed = (rc & V_ASN1_CONSTRUCTED) != 0;
    t.contents = in_.subspan(header, static_cast<size_t>(len));
    in_ = in_.subspan(header + static_cast<size_t>(len));
    consumed_ += header + static_cast<size_t>(len);
    return t;
  }

  // The next element, which must be universal `tag`.
  StatusOr<Tlv> Expect(int tag, std::string_view name) {
    const size_t at = consumed_;
    DPA_ASSIGN_OR_RETURN(Tlv t, Next());
    if (t.cls != V_ASN1_UNIVERSAL || t.tag != tag) {
      return InvalidArgumentError(what_ + ": expected " + std::string(name) +
                                  " at byte " + std::to_string(at));
    }
    return t;
  }

 private:
  ByteView in_;
  std::string what_;
  size_t consumed_ = 0;
};

std::string OidText(ByteView der_contents) {
  // Re-wrap the contents as an OBJECT IDENTIFIER to print it dotted.
  Bytes der = {V_ASN1_OBJECT, static_cast<uint8_t>(der_contents.size())};
  if (der_contents.size() > 127) return "";
  der.insert(der.end(), der_contents.begin(), der_contents.end());
  const unsigned char* p = der.data();
  OsslPtr<ASN1_OBJECT, ASN1_OBJECT_free> obj(
      d2i_ASN1_OBJECT(nullptr, &p, static_cast<long>(der.size())));
  if (!obj) {
    ERR_clear_error();
    return "";
  }
  char buf[128];
  const int n = OBJ_obj2txt(buf, sizeof buf, obj.get(), 1);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string HashName(const std::string& oid) {
  if (oid == "2.16.840.1.101.3.4.2.1") return "sha256";
  if (oid == "2.16.840.1.101.3.4.2.2") return "sha384";
  if (oid == "2.16.840.1.101.3.4.2.3") return "sha512";
  return oid;
}

StatusOr<int64_t> Integer(ByteView contents, const std::string& what) {
  if (contents.empty() || contents.size() > 8) {
    return InvalidArgumentError(what + " is not an integer of 1-8 bytes");
  }
  if ((contents[0] & 0x80) != 0) {
    return InvalidArgumentError(what + " is negative");
  }
  int64_t v = 0;
  for (uint8_t b : contents) v = (v << 8) | b;
  return v;
}

// FWID ::= SEQUENCE { hashAlg OBJECT IDENTIFIER, digest OCTET STRING }
StatusOr<DiceFwid> ParseFwid(ByteView seq_contents, const std::string& what) {
  DerReader r(seq_contents, what);
  DPA_ASSIGN_OR_RETURN(Tlv alg, r.Expect(V_ASN1_OBJECT, "FWID hashAlg"));
  DPA_ASSIGN_OR_RETURN(Tlv digest, r.Expect(V_ASN1_OCTET_STRING, "FWID digest"));
  if (!r.empty()) return InvalidArgumentError(what + ": FWID has extra members");
  DiceFwid f;
  const std::string oid = OidText(alg.contents);
  if (oid.empty()) return InvalidArgumentError(what + ": FWID hashAlg is not an OID");
  f.hash_alg = HashName(oid);
  f.digest.assign(digest.contents.begin(), digest.contents.end());
  return f;
}

bool LooksLikeFwid(const Tlv& t) {
  if (t.cls != V_ASN1_UNIVERSAL || t.tag != V_ASN1_SEQUENCE) return false;
  DerReader r(t.contents, "");
  auto first = r.Next();
  return first.ok() && first->cls == V_ASN1_UNIVERSAL && first->tag == V_ASN1_OBJECT;
}

// DiceTcbInfo ::= SEQUENCE { vendor [0] UTF8String OPTIONAL, model [1],
// version [2], svn [3] INTEGER, layer [4], index [5], fwids [6] FWIDLIST,
// flags [7], vendorInfo [8], type [9], flagsMask [10] } (all IMPLICIT).
StatusOr<DiceTcb> ParseTcbInfo(ByteView contents, const std::string& what) {
  DiceTcb tcb;
  tcb.reading = "tcb_info";
  DerReader r(contents, what);
  int last = -1;
  while (!r.empty()) {
    DPA_ASSIGN_OR_RETURN(Tlv t, r.Next());
    if (t.cls != V_ASN1_CONTEXT_SPECIFIC || t.tag > 10 || t.tag <= last) {
      return InvalidArgumentError(what + ": DiceTcbInfo member is not a context tag "
                                  "[0]-[10] in ascending order");
    }
    last = t.tag;
    const std::string text(reinterpret_cast<const char*>(t.contents.data()),
                           t.contents.size());
    static constexpr std::optional<std::string> DiceTcb::*kTexts[] = {
        &DiceTcb::vendor, &DiceTcb::model, &DiceTcb::version};
    static constexpr std::optional<int64_t> DiceTcb::*kInts[] = {
        &DiceTcb::svn, &DiceTcb::layer, &DiceTcb::index};
    static constexpr const char* kIntNames[] = {" svn", " layer", " index"};
    switch (t.tag) {
      case 0:
      case 1:
      case 2:
        tcb.*kTexts[t.tag] = text;
        break;
      case 3:
      case 4:
      case 5: {
        DPA_ASSIGN_OR_RETURN(int64_t v, Integer(t.contents, what + kIntNames[t.tag - 3]));
        tcb.*kInts[t.tag - 3] = v;
        break;
      }
      case 6: {
        DerReader list(t.contents, what + " fwids");
        while (!list.empty()) {
          DPA_ASSIGN_OR_RETURN(Tlv f, list.Expect(V_ASN1_SEQUENCE, "FWID"));
          DPA_ASSIGN_OR_RETURN(DiceFwid fwid, ParseFwid(f.contents, what));
          tcb.fwids.push_back(std::move(fwid));
        }
        break;
      }
      default:
        break;  // flags, vendorInfo, type, flagsMask: kept out of the model
    }
  }
  return tcb;
}

// SEQUENCE { INTEGER version, SubjectPublicKeyInfo, FWID... }, or FWID, or
// SEQUENCE OF FWID.
StatusOr<DiceTcb> ParseFwidForms(const Tlv& outer, const std::string& what) {
  DiceTcb tcb;
  if (LooksLikeFwid(outer)) {
    tcb.reading = "fwid_list";
    DPA_ASSIGN_OR_RETURN(DiceFwid f, ParseFwid(outer.contents, what));
    tcb.fwids.push_back(std::move(f));
    return tcb;
  }
  DerReader r(outer.contents, what);
  DPA_ASSIGN_OR_RETURN(Tlv first, r.Next());
  if (first.cls == V_ASN1_UNIVERSAL && first.tag == V_ASN1_INTEGER) {
    tcb.reading = "fwid_draft";
    DPA_ASSIGN_OR_RETURN(int64_t version, Integer(first.contents, what + " version"));
    tcb.version = std::to_string(version);
    while (!r.empty()) {
      DPA_ASSIGN_OR_RETURN(Tlv t, r.Next());
      if (LooksLikeFwid(t)) {
        DPA_ASSIGN_OR_RETURN(DiceFwid f, ParseFwid(t.contents, what));
        tcb.fwids.push_back(std::move(f));
      } else if (t.cls != V_ASN1_UNIVERSAL || t.tag != V_ASN1_SEQUENCE) {
        return InvalidArgumentError(what + ": unexpected member in the FWID draft form");
      }  // a SEQUENCE that is not an FWID: the SubjectPublicKeyInfo
    }
  } else if (LooksLikeFwid(first)) {
    tcb.reading = "fwid_list";
    DPA_ASSIGN_OR_RETURN(DiceFwid f, ParseFwid(first.contents, what));
    tcb.fwids.push_back(std::move(f));
    while (!r.empty()) {
      DPA_ASSIGN_OR_RETURN(Tlv t, r.Expect(V_ASN1_SEQUENCE, "FWID"));
      DPA_ASSIGN_OR_RETURN(DiceFwid g, ParseFwid(t.contents, what));
      tcb.fwids.push_back(std::move(g));
    }
  } else {
    return InvalidArgumentError(what + ": neither DiceTcbInfo nor FWID");
  }
  if (tcb.fwids.empty()) return InvalidArgumentError(what + ": no FWID");
  return tcb;
}

std::string NameLine(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n > 0 ? n : 0));
}

std::string SpkiSha256(X509* cert) {
  unsigned char* der = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  if (len <= 0) return "";
  OsslBytesPtr<unsigned char> owned(der);
  return Sha256Hex(ByteView(der, static_cast<size_t>(len)));
}

int64_t UnixTime(const ASN1_TIME* t) {
  struct tm tm = {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

StatusOr<std::vector<X509Ptr>> ReadPemCertificates(std::string_view pem,
                                                    const std::string& what) {
  if (pem.size() > kMaxChainPemBytes) {
    return InvalidArgumentError(what + " of " + std::to_string(pem.size()) +
                                " bytes exceeds " + std::to_string(kMaxChainPemBytes));
  }
  std::vector<X509Ptr> out;
  size_t pos = 0;
  constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  while ((pos = pem.find(kBegin, pos)) != std::string_view::npos) {
    const size_t end = pem.find(kEnd, pos);
    const size_t n = out.size();
    if (end == std::string_view::npos) {
      return InvalidArgumentError(what + ": certificate " + std::to_string(n) +
                                  " has no END line");
    }
    const std::string_view block = pem.substr(pos, end + kEnd.size() - pos);
    BioPtr bio(BIO_new_mem_buf(block.data(), static_cast<int>(block.size())));
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPemPassphrase, nullptr));
    if (!cert) {
      ERR_clear_error();
      return InvalidArgumentError(what + ": certificate " + std::to_string(n) +
                                  " does not parse (truncated or not DER)");
    }
    out.push_back(std::move(cert));
    if (out.size() > kMaxChainCertificates) {
      return InvalidArgumentError(what + " holds more than " +
                                  std::to_string(kMaxChainCertificates) +
                                  " certificates");
    }
    pos = end + kEnd.size();
  }
  if (out.empty()) return InvalidArgumentError(what + " holds no certificate");
  return out;
}

bool SelfIssued(X509* c) {
  return X509_NAME_cmp(X509_get_subject_name(c), X509_get_issuer_name(c)) == 0;
}

// OpenSSL calls this for every check; we accept one failure only: a critical
// extension OpenSSL does not know, when every such extension of that
// certificate is a DICE extension we read ourselves.
int VerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (ok == 1) return 1;
  if (X509_STORE_CTX_get_error(ctx) != X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION) {
    return 0;
  }
  X509* cert = X509_STORE_CTX_get_current_cert(ctx);
  for (int i = 0; i < X509_get_ext_count(cert); ++i) {
    X509_EXTENSION* ext = X509_get_ext(cert, i);
    if (X509_EXTENSION_get_critical(ext) == 0) continue;
    if (X509_supported_extension(ext) == 1) continue;
    char buf[80];
    OBJ_obj2txt(buf, sizeof buf, X509_EXTENSION_get_object(ext), 1);
    if (!IsDiceOid(buf)) return 0;
  }
  X509_STORE_CTX_set_error(ctx, X509_V_OK);
  return 1;
}

}  // namespace

StatusOr<std::vector<DiceTcb>> ParseDiceExtensions(X509* cert);

namespace {

StatusOr<ChainCertificate> Describe(X509* c, size_t i) {
  ChainCertificate cc;
  cc.subject = NameLine(X509_get_subject_name(c));
  cc.issuer = NameLine(X509_get_issuer_name(c));
  BnPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), nullptr));
  if (serial) {
    OsslBytesPtr<char> hex(BN_bn2hex(serial.get()));
    std::string s = hex ? hex.get() : "";
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    cc.serial_hex = s;
  }
  cc.spki_sha256 = SpkiSha256(c);
  cc.not_before = UnixTime(X509_get0_notBefore(c));
  cc.not_after = UnixTime(X509_get0_notAfter(c));
  auto dice = ParseDiceExtensions(c);
  if (!dice.ok()) {
    return InvalidArgumentError("certificate " + std::to_string(i) + " (" + cc.subject +
                                "): " + dice.status().message());
  }
  cc.dice = std::move(dice).value();
  return cc;
}

}  // namespace

StatusOr<UnvalidatedLeaf> ReadLeafUnvalidated(std::string_view pem) {
  DPA_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ReadPemCertificates(pem, "certificate"));
  UnvalidatedLeaf out;
  DPA_ASSIGN_OR_RETURN(out.certificate, Describe(certs.front().get(), 0));
  DPA_ASSIGN_OR_RETURN(out.key, SpdmPublicKey::FromCertificate(certs.front().get()));
  return out;
}

StatusOr<std::vector<DiceTcb>> ParseDiceExtensionValue(std::string_view oid,
                                                       ByteView der) {
  const std::string what = "DICE extension " + std::string(oid);
  DerReader r(der, what);
  DPA_ASSIGN_OR_RETURN(Tlv outer, r.Expect(V_ASN1_SEQUENCE, "SEQUENCE"));
  if (!r.empty()) return InvalidArgumentError(what + ": bytes trail the SEQUENCE");
  std::vector<DiceTcb> out;
  if (oid == kOidMultiTcbInfo) {
    DerReader list(outer.contents, what);
    while (!list.empty()) {
      DPA_ASSIGN_OR_RETURN(Tlv t, list.Expect(V_ASN1_SEQUENCE, "DiceTcbInfo"));
      DPA_ASSIGN_OR_RETURN(DiceTcb tcb, ParseTcbInfo(t.contents, what));
      tcb.oid = std::string(oid);
      out.push_back(std::move(tcb));
    }
    return out;
  }
  DerReader peek(outer.contents, what);
  std::optional<Tlv> first;
  if (!peek.empty()) {
    DPA_ASSIGN_OR_RETURN(Tlv t, peek.Next());
    first = t;
  }
  DiceTcb tcb;
  if (first && first->cls == V_ASN1_CONTEXT_SPECIFIC) {
    DPA_ASSIGN_OR_RETURN(tcb, ParseTcbInfo(outer.contents, what));
  } else {
    DPA_ASSIGN_OR_RETURN(tcb, ParseFwidForms(outer, what));
  }
  tcb.oid = std::string(oid);
  out.push_back(std::move(tcb));
  return out;
}

StatusOr<std::vector<DiceTcb>> ParseDiceExtensions(X509* cert) {
  std::vector<DiceTcb> out;
  for (int i = 0; i < X509_get_ext_count(cert); ++i) {
    X509_EXTENSION* ext = X509_get_ext(cert, i);
    char buf[80];
    const int n = OBJ_obj2txt(buf, sizeof buf, X509_EXTENSION_get_object(ext), 1);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) continue;
    const std::string oid(buf, static_cast<size_t>(n));
    const DiceOid* dice = FindDiceOid(oid);
    if (dice == nullptr || !dice->evidence) continue;
    const ASN1_OCTET_STRING* value = X509_EXTENSION_get_data(ext);
    DPA_ASSIGN_OR_RETURN(
        std::vector<DiceTcb> tcbs,
        ParseDiceExtensionValue(oid, ByteView(ASN1_STRING_get0_data(value),
                                              static_cast<size_t>(ASN1_STRING_length(value)))));
    for (DiceTcb& t : tcbs) out.push_back(std::move(t));
  }
  return out;
}

StatusOr<TrustAnchors> TrustAnchors::FromPem(const std::vector<std::string>& pems,
                                             const std::vector<std::string>& names) {
  TrustAnchors a;
  for (size_t i = 0; i < pems.size(); ++i) {
    const std::string name = i < names.size() ? names[i] : "anchor " + std::to_string(i);
    DPA_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ReadPemCertificates(pems[i], name));
    for (X509Ptr& c : certs) {
      a.spki_.push_back(SpkiSha256(c.get()));
      a.certs_.push_back(std::move(c));
    }
  }
  if (a.certs_.empty()) return InvalidArgumentError("no trust anchor certificates");
  return a;
}

std::vector<std::string> TrustAnchors::SpkiHashes() const { return spki_; }

class ChainValidator {
 public:
  static StatusOr<ValidatedChain> Run(std::string_view pem, const TrustAnchors& anchors,
                                      int64_t now) {
    DPA_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs,
                         ReadPemCertificates(pem, "certificate chain"));
    ValidatedChain out;
    // Root first when the first certificate is self-issued and others follow.
    if (certs.size() > 1 && SelfIssued(certs.front().get())) {
      std::reverse(certs.begin(), certs.end());
      out.root_first_ = true;
    }
    for (size_t i = 0; i + 1 < certs.size(); ++i) {
      if (X509_NAME_cmp(X509_get_issuer_name(certs[i].get()),
                        X509_get_subject_name(certs[i + 1].get())) != 0) {
        return InvalidArgumentError(
            "certificate chain is not in order: certificate " + std::to_string(i) +
            " (" + NameLine(X509_get_subject_name(certs[i].get())) +
            ") is not issued by the next (" +
            NameLine(X509_get_subject_name(certs[i + 1].get())) + ")");
      }
    }
    // The anchor: the top certificate's own key, or the anchor that issued it.
    X509* top = certs.back().get();
    const std::string top_spki = SpkiSha256(top);
    X509* anchor = nullptr;
    for (size_t i = 0; i < anchors.certs_.size(); ++i) {
      if (anchors.spki_[i] == top_spki) {
        anchor = top;
        out.anchor_spki_ = top_spki;
        break;
      }
    }
    if (anchor == nullptr) {
      for (size_t i = 0; i < anchors.certs_.size(); ++i) {
        X509* a = anchors.certs_[i].get();
        if (X509_NAME_cmp(X509_get_subject_name(a), X509_get_issuer_name(top)) == 0 &&
            X509_verify(top, X509_get0_pubkey(a)) == 1) {
          anchor = a;
          out.anchor_spki_ = anchors.spki_[i];
          break;
        }
        ERR_clear_error();
      }
    }
    if (anchor == nullptr) {
      return UnauthenticatedError(
          "certificate chain ends at " + NameLine(X509_get_subject_name(top)) +
          " (key SHA-256 " + top_spki + "), which no trust anchor's key matches");
    }
    X509StorePtr store(X509_STORE_new());
    X509StackPtr untrusted(sk_X509_new_null());
    if (!store || !untrusted || X509_STORE_add_cert(store.get(), anchor) != 1) {
      return SslStatus("building the trust store failed");
    }
    X509_STORE_set_verify_cb(store.get(), VerifyCallback);
    for (size_t i = 1; i < certs.size(); ++i) {
      if (certs[i].get() == anchor) continue;
      X509_up_ref(certs[i].get());
      sk_X509_push(untrusted.get(), certs[i].get());
    }
    X509StoreCtxPtr ctx(X509_STORE_CTX_new());
    if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), certs.front().get(),
                                    untrusted.get()) != 1) {
      return SslStatus("X509_STORE_CTX_init failed");
    }
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_time(param, static_cast<time_t>(now));
    X509_VERIFY_PARAM_set_depth(param, static_cast<int>(kMaxChainCertificates));
    if (X509_verify_cert(ctx.get()) != 1) {
      const int err = X509_STORE_CTX_get_error(ctx.get());
      const int depth = X509_STORE_CTX_get_error_depth(ctx.get());
      X509* bad = X509_STORE_CTX_get_current_cert(ctx.get());
      ERR_clear_error();
      return UnauthenticatedError(
          "certificate " + std::to_string(depth) + " (" +
          (bad ? NameLine(X509_get_subject_name(bad)) : std::string("?")) +
          ") fails path validation: " + X509_verify_cert_error_string(err));
    }
    for (size_t i = 0; i < certs.size(); ++i) {
      DPA_ASSIGN_OR_RETURN(ChainCertificate cc, Describe(certs[i].get(), i));
      out.certs_.push_back(std::move(cc));
    }
    DPA_ASSIGN_OR_RETURN(out.leaf_key_, SpdmPublicKey::FromCertificate(certs.front().get()));
    return out;
  }
};

StatusOr<ValidatedChain> ValidateChain(std::string_view pem_chain,
                                       const TrustAnchors& anchors, int64_t now) {
  return ChainValidator::Run(pem_chain, anchors, now);
}

}  // namespace dpuaudit::spdm
