// The component versions a BFB carries (issue 16 §6; docs/bluefield.md#bfb-versions),
// read the two ways NVIDIA's own tools read them:
//
//  1. The strings of the boot firmware, as `bfver` (bfscripts) and
//     `bfb-info` (bf-release) do on a boot stream: the ATF version is the
//     first printable ASCII string (4 or more characters, `strings`) that
//     contains "(release)" or "(debug)"; the UEFI version is the second
//     ':'-separated field of the first UTF-16LE string (`strings -e l`)
//     that contains "BlueField". A node's `bfver` prints these very
//     strings for the stream on its boot partition, so a release made from
//     them matches what its nodes report.
//  2. The `info` image (id 50, "BFB versioning information" in mlx-mkbfb),
//     which BFB builders fill (`mlx-mkbfb --info FILE`) with a Redfish
//     SoftwareInventoryCollection: {"Members": [{"Name": "BF3_ATF",
//     "Version": "..."}, ...]}. Names are <model prefix BF2_|BF3_><part>:
//     ATF, UEFI, BSP, NIC_FW map to the components atf, uefi, bsp, nic-fw;
//     OS (dpuaudit's name; NVIDIA's builders write none) to os; every other
//     member (DOCA, BMC_FW, CEC_FW, ...) is kept as information only.
//
// Merging: for atf and uefi the firmware's own strings win (they are what
// bfver prints); an info value that differs is reported in `notes`, except
// an info ATF that is the part after the last ':' of the strings value
// (builders that cut bfver's line write only that part). bsp, nic-fw and os
// come from the info image only.
//
// Guarantees: bounded memory (the info image is kept only up to 1 MiB, a
// string run only up to 512 characters); never fails: what cannot be read
// is a note ("the info image is not JSON: ..."), and a BFB without any
// version source yields no versions.
// Does not: verify anything (the strings and the info image are unsigned
// data inside signed images or beside them); read versions out of the
// compressed OS image (the OS release comes from the info image or the
// operator).
#ifndef DPUAUDIT_BLUEFIELD_BFB_INFO_H_
#define DPUAUDIT_BLUEFIELD_BFB_INFO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bluefield/bfb.h"

namespace dpuaudit::bluefield {

struct BfbComponentVersion {
  std::string component;  // "atf" | "uefi" | "bsp" | "nic-fw" | "os"
  std::string model;      // "BlueField-3", "BlueField-2", "" (any model)
  std::string version;
  std::string source;     // "bl31 strings at offset 0x…", "info image member BF3_ATF"
  bool operator==(const BfbComponentVersion&) const = default;
};

struct BfbInfoMember {  // an info member that is not a component
  std::string name;     // "DOCA", "BF3_BMC_FW"
  std::string version;
  bool operator==(const BfbInfoMember&) const = default;
};

struct BfbVersions {
  // "absent" (no info image), "ok", "malformed" (see notes), "too-large".
  std::string info_status = "absent";
  std::vector<BfbComponentVersion> components;  // merged, atf uefi bsp nic-fw os order
  std::vector<BfbInfoMember> other;
  std::vector<std::string> notes;
  bool operator==(const BfbVersions&) const = default;
};

// Feed it to ParseBfb; call Versions() after a successful parse.
class BfbVersionScanner final : public BfbImageObserver {
 public:
  BfbVersionScanner();
  ~BfbVersionScanner() override;
  void BeginImage(const BfbImage& image) override;
  void ImageData(const uint8_t* data, size_t n) override;
  BfbVersions Versions() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The versions that apply to `model` (canonical "BlueField-3"): the
// components of that model or of no model, one per component.
std::vector<BfbComponentVersion> VersionsForModel(const BfbVersions& v,
                                                  const std::string& model);

// {"info": status, "components": [{"component","model","version","source"}],
//  "other": [{"name","version"}], "notes": [...]}
nlohmann::json BfbVersionsJson(const BfbVersions& v);
// A few lines for `bfb inspect`, each fitting 100 columns.
std::string FormatBfbVersions(const BfbVersions& v);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_BFB_INFO_H_
