// The BFB version decoder (bfb_info.h): two `strings` scanners fed chunk by
// chunk, and the info image kept (bounded) and decoded at the end.
#include "bluefield/bfb_info.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

#include "common/bytes.h"

namespace dpuaudit::bluefield {
namespace {

using nlohmann::json;

constexpr uint8_t kInfoImageId = 50;           // mlx-mkbfb image_list "info"
constexpr size_t kMaxInfoBytes = 1 << 20;      // kept for decoding
constexpr size_t kMaxRun = 512;                // characters kept of a string
constexpr size_t kMinRun = 4;                  // `strings` default -n 4
constexpr size_t kMaxOther = 64;               // information members kept

// Images whose strings are not the boot firmware's: the OS payload, the
// NIC firmware and the info image itself.
bool ScannedForStrings(const std::string& name) {
  static const std::set<std::string> kSkip = {"info", "image", "initramfs", "ramdisk",
                                              "upgrade-image", "nicfw"};
  return kSkip.count(name) == 0;
}

bool Printable(uint8_t c) { return (c >= 0x20 && c < 0x7f) || c == '\t'; }

std::string HexOffset(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// One run of printable characters and where it started.
struct Run {
  std::string text;
  uint64_t start = 0;  // absolute offset of its first byte
  size_t chars = 0;    // may exceed text.size() (kept only up to kMaxRun)
  void Add(char c, uint64_t at) {
    if (chars == 0) start = at;
    if (text.size() < kMaxRun) text.push_back(c);
    ++chars;
  }
  void Clear() {
    text.clear();
    chars = 0;
  }
};

struct Found {
  std::string text;
  uint64_t offset = 0;
  std::string image;
};

std::string CutField2(const std::string& line) {
  // `cut -d: -f2`: the second ':'-separated field; a line without ':' is
  // printed whole by cut, but carries no version, so it is not used.
  size_t a = line.find(':');
  if (a == std::string::npos) return "";
  size_t b = line.find(':', a + 1);
  return line.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

}  // namespace

struct BfbVersionScanner::State {
  // the image being read
  std::string name;
  uint64_t data_offset = 0;
  bool scan = false;
  bool info = false;
  uint64_t pos = 0;  // bytes of this image seen
  uint8_t prev = 0;
  Run ascii;
  Run wide[2];  // UTF-16LE units starting at even / odd positions
  std::optional<Found> atf;
  std::vector<Found> uefi;  // distinct matches, first first
  // the info image
  bool info_seen = false;
  bool info_too_large = false;
  std::string info_bytes;
  int info_images = 0;

  void EndAscii() {
    if (ascii.chars >= kMinRun && !atf &&
        (ascii.text.find("(release)") != std::string::npos ||
         ascii.text.find("(debug)") != std::string::npos)) {
      atf = Found{ascii.text, ascii.start, name};
    }
    ascii.Clear();
  }
  void EndWide(int parity) {
    Run& r = wide[parity];
    if (r.chars >= kMinRun && r.text.find("BlueField") != std::string::npos) {
      const bool seen = std::any_of(uefi.begin(), uefi.end(),
                                    [&](const Found& f) { return f.text == r.text; });
      if (!seen && uefi.size() < 8) uefi.push_back(Found{r.text, r.start, name});
    }
    r.Clear();
  }
  void EndAll() {
    EndAscii();
    EndWide(0);
    EndWide(1);
  }
};

BfbVersionScanner::BfbVersionScanner() : s_(std::make_unique<State>()) {}
BfbVersionScanner::~BfbVersionScanner() = default;

void BfbVersionScanner::BeginImage(const BfbImage& image) {
  State& s = *s_;
  s.EndAll();
  s.name = image.name;
  s.data_offset = image.data_offset;
  s.pos = 0;
  s.info = image.header.image_id == kInfoImageId;
  s.scan = !s.info && ScannedForStrings(image.name);
  if (s.info) {
    ++s.info_images;
    // The last info image wins (mlx-mkbfb writes one); start afresh.
    s.info_seen = true;
    s.info_too_large = image.header.image_len > kMaxInfoBytes;
    s.info_bytes.clear();
  }
}

void BfbVersionScanner::ImageData(const uint8_t* data, size_t n) {
  State& s = *s_;
  if (s.info) {
    if (!s.info_too_large) s.info_bytes.append(reinterpret_cast<const char*>(data), n);
    return;
  }
  if (!s.scan) return;
  for (size_t i = 0; i < n; ++i, ++s.pos) {
    const uint8_t b = data[i];
    const uint64_t at = s.data_offset + s.pos;
    if (Printable(b)) {
      s.ascii.Add(static_cast<char>(b), at);
    } else {
      s.EndAscii();
    }
    if (s.pos >= 1) {
      // The 2-byte unit (prev, b) that ends here belongs to the scanner of
      // the parity it started at.
      const int parity = static_cast<int>((s.pos - 1) & 1);
      if (b == 0 && Printable(s.prev)) {
        s.wide[parity].Add(static_cast<char>(s.prev), at - 1);
      } else {
        s.EndWide(parity);
      }
    }
    s.prev = b;
  }
}

BfbVersions BfbVersionScanner::Versions() const {
  State s = *s_;  // a copy: ending the runs must not change the scanner
  s.EndAll();
  BfbVersions out;
  std::vector<BfbComponentVersion> info_components;
  if (s.info_images > 1) {
    out.notes.push_back("the BFB has " + std::to_string(s.info_images) +
                        " info images; the last one is used.");
  }
  if (!s.info_seen) {
    out.info_status = "absent";
  } else if (s.info_too_large) {
    out.info_status = "too-large";
    out.notes.push_back("the info image is larger than 1 MiB; it was not decoded.");
  } else {
    json j = json::parse(s.info_bytes, nullptr, false);
    if (j.is_discarded()) {
      out.info_status = "malformed";
      out.notes.push_back("the info image is not JSON.");
    } else if (!j.is_object() || !j.contains("Members") || !j["Members"].is_array()) {
      out.info_status = "malformed";
      out.notes.push_back(
          "the info image has no \"Members\" list (not a Redfish SoftwareInventoryCollection).");
    } else {
      out.info_status = "ok";
      static const std::vector<std::pair<std::string, std::string>> kParts = {
          {"ATF", "atf"}, {"UEFI", "uefi"}, {"BSP", "bsp"}, {"NIC_FW", "nic-fw"}, {"OS", "os"}};
      size_t index = 0;
      for (const json& m : j["Members"]) {
        const std::string where = "info image Members[" + std::to_string(index++) + "]";
        if (!m.is_object() || !m.contains("Name") || !m["Name"].is_string() ||
            !m.contains("Version") || !m["Version"].is_string()) {
          out.notes.push_back(where + " has no string Name and Version; skipped.");
          continue;
        }
        const std::string name = m["Name"].get<std::string>();
        const std::string version = Trim(m["Version"].get<std::string>());
        std::string model, part = name;
        if (name.rfind("BF3_", 0) == 0 || name.rfind("BF2_", 0) == 0) {
          model = name[2] == '3' ? "BlueField-3" : "BlueField-2";
          part = name.substr(4);
        }
        auto it = std::find_if(kParts.begin(), kParts.end(),
                               [&](const auto& p) { return p.first == part; });
        if (it == kParts.end()) {
          if (out.other.size() < kMaxOther) out.other.push_back({name, version});
          continue;
        }
        if (version.empty()) {
          out.notes.push_back(where + " (" + name + ") has an empty Version; skipped.");
          continue;
        }
        info_components.push_back(
            {it->second, model, version, "info image member " + name});
      }
    }
  }
  // atf and uefi: the firmware's strings, as bfver prints them.
  auto from_info = [&](const std::string& component) {
    std::vector<BfbComponentVersion> v;
    for (const auto& c : info_components) {
      if (c.component == component) v.push_back(c);
    }
    return v;
  };
  auto merge = [&](const std::string& component, const std::optional<Found>& found,
                   const std::string& value) {
    std::vector<BfbComponentVersion> info = from_info(component);
    if (!found) {
      for (auto& c : info) out.components.push_back(c);
      return;
    }
    out.components.push_back({component, "", value,
                              "strings of image " + found->image + " at offset " +
                                  HexOffset(found->offset)});
    for (const auto& c : info) {
      if (c.version == value) continue;
      const size_t colon = value.rfind(':');
      if (component == "atf" && colon != std::string::npos &&
          value.substr(colon + 1) == c.version) {
        continue;  // the builder wrote the part after bfver's last ':'
      }
      out.notes.push_back(c.source + " says " + component + " \"" + c.version +
                          "\", the firmware's strings \"" + value +
                          "\"; the strings are used (they are what bfver prints).");
    }
  };
  merge("atf", s.atf, s.atf ? Trim(s.atf->text) : "");
  std::optional<Found> uefi;
  std::string uefi_value;
  for (const Found& f : s.uefi) {
    std::string v = Trim(CutField2(f.text));
    if (v.empty()) continue;
    if (!uefi) {
      uefi = f;
      uefi_value = v;
    } else if (v != uefi_value) {
      out.notes.push_back("another UTF-16 \"BlueField\" string at offset " +
                          HexOffset(f.offset) + " gives uefi \"" + v + "\"; the first is used.");
    }
  }
  merge("uefi", uefi, uefi_value);
  for (const char* c : {"bsp", "nic-fw", "os"}) {
    for (auto& v : from_info(c)) out.components.push_back(v);
  }
  return out;
}

std::vector<BfbComponentVersion> VersionsForModel(const BfbVersions& v,
                                                  const std::string& model) {
  std::vector<BfbComponentVersion> out;
  // Model-specific first, then model-free; the first per component wins.
  for (bool specific : {true, false}) {
    for (const auto& c : v.components) {
      if (specific ? c.model != model : !c.model.empty()) continue;
      bool have = std::any_of(out.begin(), out.end(),
                              [&](const auto& o) { return o.component == c.component; });
      if (!have) out.push_back(c);
    }
  }
  static const std::vector<std::string> kOrder = {"atf", "uefi", "bsp", "nic-fw", "os"};
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::find(kOrder.begin(), kOrder.end(), a.component) <
           std::find(kOrder.begin(), kOrder.end(), b.component);
  });
  return out;
}

nlohmann::json BfbVersionsJson(const BfbVersions& v) {
  json components = json::array();
  for (const auto& c : v.components) {
    components.push_back({{"component", c.component},
                          {"model", c.model.empty() ? json(nullptr) : json(c.model)},
                          {"version", c.version},
                          {"source", c.source}});
  }
  json other = json::array();
  for (const auto& o : v.other) other.push_back({{"name", o.name}, {"version", o.version}});
  return {{"info", v.info_status},
          {"components", std::move(components)},
          {"other", std::move(other)},
          {"notes", v.notes}};
}

std::string FormatBfbVersions(const BfbVersions& v) {
  std::string out = "versions (info image: " + v.info_status + "):\n";
  if (v.components.empty()) out += "  none found (no bfver strings, no info image versions)\n";
  for (const auto& c : v.components) {
    std::string line = "  " + c.component + std::string(8 - std::min<size_t>(7, c.component.size()), ' ') +
                       (c.model.empty() ? "" : "[" + c.model + "] ") + c.version;
    out += line + "\n    from " + c.source + "\n";
  }
  for (const auto& o : v.other) out += "  (info) " + o.name + " " + o.version + "\n";
  for (const auto& n : v.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace dpuaudit::bluefield
