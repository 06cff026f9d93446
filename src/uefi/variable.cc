#include "uefi/variable.h"

#include <cstdio>

#include "uefi/ucs2.h"

namespace dpuaudit::uefi {
namespace {

std::string HexNum(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

StatusOr<UefiVariable> DecodeUefiVariable(ByteView data) {
  ByteReader r(data);
  UefiVariable v;
  DPA_ASSIGN_OR_RETURN(ByteView guid, r.Take(kGuidBytes, "VariableName"));
  v.guid = Guid::FromBytes(guid);
  DPA_ASSIGN_OR_RETURN(uint64_t name_chars, r.U64Le("UnicodeNameLength"));
  DPA_ASSIGN_OR_RETURN(uint64_t data_bytes, r.U64Le("VariableDataLength"));
  if (name_chars > r.remaining() / 2) {
    return InvalidArgumentError("UEFI variable: UnicodeNameLength " +
                                std::to_string(name_chars) + " exceeds the " +
                                std::to_string(r.remaining()) + " bytes left.");
  }
  ByteView name =
      r.Take(static_cast<size_t>(name_chars) * 2, "UnicodeName").value();
  if (data_bytes > r.remaining()) {
    return InvalidArgumentError("UEFI variable: VariableDataLength " +
                                std::to_string(data_bytes) + " exceeds the " +
                                std::to_string(r.remaining()) + " bytes left.");
  }
  v.name = Ucs2ToUtf8Lossy(name);
  v.data = r.Take(static_cast<size_t>(data_bytes), "VariableData").value();
  return v;
}

Status ParseSignatureLists(ByteView data,
                           std::vector<EfiSignatureList>* lists) {
  ByteReader r(data);
  while (!r.empty()) {
    EfiSignatureList list;
    list.offset = r.offset();
    const std::string at = "EFI_SIGNATURE_LIST at offset " + HexNum(r.offset());
    if (r.remaining() < kSignatureListHeaderBytes) {
      return InvalidArgumentError(
          at + ": " + std::to_string(r.remaining()) +
          " bytes left, shorter than its 28-byte header.");
    }
    list.type = Guid::FromBytes(r.Take(kGuidBytes, "SignatureType").value());
    const uint32_t list_size = r.U32Le("SignatureListSize").value();
    const uint32_t header_size = r.U32Le("SignatureHeaderSize").value();
    const uint32_t sig_size = r.U32Le("SignatureSize").value();
    if (list_size < kSignatureListHeaderBytes ||
        list_size - kSignatureListHeaderBytes > r.remaining()) {
      return InvalidArgumentError(
          at + ": SignatureListSize " + std::to_string(list_size) +
          " does not fit the " +
          std::to_string(r.remaining() + kSignatureListHeaderBytes) +
          " bytes left.");
    }
    ByteView body =
        r.Take(list_size - kSignatureListHeaderBytes, "list").value();
    if (header_size > body.size()) {
      return InvalidArgumentError(at + ": SignatureHeaderSize " +
                                  std::to_string(header_size) +
                                  " exceeds the list.");
    }
    ByteView sigs = body.subspan(header_size);
    if (sig_size < kGuidBytes) {
      return InvalidArgumentError(at + ": SignatureSize " +
                                  std::to_string(sig_size) +
                                  " is smaller than the 16-byte owner GUID.");
    }
    if (sigs.size() % sig_size != 0) {
      return InvalidArgumentError(at + ": " + std::to_string(sigs.size()) +
                                  " bytes of signatures are not a multiple of "
                                  "SignatureSize " +
                                  std::to_string(sig_size) + ".");
    }
    for (size_t off = 0; off < sigs.size(); off += sig_size) {
      EfiSignatureData sig;
      sig.owner = Guid::FromBytes(sigs.subspan(off, kGuidBytes));
      sig.data = sigs.subspan(off + kGuidBytes, sig_size - kGuidBytes);
      list.signatures.push_back(sig);
    }
    lists->push_back(std::move(list));
  }
  return OkStatus();
}

StatusOr<bool> ParseSecureBootValue(ByteView data) {
  if (data.size() > 1) {
    return InvalidArgumentError("SecureBoot holds " +
                                std::to_string(data.size()) +
                                " bytes, expected 1.");
  }
  return !data.empty() && data[0] != 0;
}

SecureBootVariable ClassifySecureBootVariable(const Guid& guid,
                                              std::string_view name) {
  if (guid == kEfiGlobalVariable) {
    if (name == "SecureBoot") return SecureBootVariable::kSecureBoot;
    if (name == "PK") return SecureBootVariable::kPk;
    if (name == "KEK") return SecureBootVariable::kKek;
  } else if (guid == kEfiImageSecurityDatabase) {
    if (name == "db") return SecureBootVariable::kDb;
    if (name == "dbx") return SecureBootVariable::kDbx;
  }
  return SecureBootVariable::kOther;
}

}  // namespace dpuaudit::uefi
