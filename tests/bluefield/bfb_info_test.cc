// BfbVersionScanner (bluefield/bfb_info.h): the bfver/bfb-info `strings`
// rules and the info image, over BFBs built here field by field.
#include "bluefield/bfb_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/bytes.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

constexpr uint8_t kBl31 = 3, kBl33 = 5, kInfo = 50, kImage = 62;

Bytes Utf16(const std::string& s) {
  Bytes out;
  for (char c : s) {
    out.push_back(static_cast<uint8_t>(c));
    out.push_back(0);
  }
  return out;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

BfbVersions Scan(const std::vector<std::pair<uint8_t, Bytes>>& images) {
  BfbVersionScanner scanner;
  Bytes bfb = BuildBfb(images);
  // Through the streaming parser, as the CLI reads a file.
  class View final : public ByteStream {
   public:
    explicit View(const Bytes& d) : d_(d) {}
    StatusOr<size_t> Read(uint8_t* out, size_t max) override {
      size_t n = std::min<size_t>({max, d_.size() - pos_, 7});  // small reads: chunk edges
      std::copy(d_.begin() + static_cast<long>(pos_), d_.begin() + static_cast<long>(pos_ + n),
                out);
      pos_ += n;
      return n;
    }
    std::string Name() const override { return "test"; }

   private:
    const Bytes& d_;
    size_t pos_ = 0;
  };
  View in(bfb);
  auto layout = ParseBfb(in, {}, &scanner);
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  return scanner.Versions();
}

std::string Get(const BfbVersions& v, const std::string& component, const std::string& model) {
  for (const auto& c : VersionsForModel(v, model)) {
    if (c.component == component) return c.version;
  }
  return "(none)";
}

TEST(BfbVersionsTest, StringsOfTheFirmwareAsBfverReadsThem) {
  // bl31: binary noise, a short "(release)" run (3 chars: not a string),
  // then the version string terminated by NUL.
  Bytes bl31 = Cat({Bytes{0x01, 0xff}, ToBytes("v2("), Bytes{0},
                    ToBytes("v2.2(release):4.9.1-21-gfc25b08d9"), Bytes{0, 0x90}});
  // bl33: the UEFI version as UTF-16LE at an odd offset.
  Bytes bl33 = Cat({Bytes{0x7f}, Utf16("BlueField:4.9.1-36-g0c3239837a"), Bytes{0, 0}});
  BfbVersions v = Scan({{kBl31, bl31}, {kBl33, bl33}});
  EXPECT_EQ(v.info_status, "absent");
  EXPECT_EQ(Get(v, "atf", "BlueField-3"), "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(Get(v, "uefi", "BlueField-3"), "4.9.1-36-g0c3239837a");
  EXPECT_EQ(Get(v, "bsp", "BlueField-3"), "(none)");
  ASSERT_FALSE(v.components.empty());
  EXPECT_THAT(v.components[0].source, HasSubstr("strings of image bl31 at offset 0x"));
}

TEST(BfbVersionsTest, TheOsImageIsNotSearched) {
  Bytes image = ToBytes("kernel v9.9(debug):junk");
  BfbVersions v = Scan({{kImage, image}});
  EXPECT_TRUE(v.components.empty());
}

TEST(BfbVersionsTest, TheInfoImageGivesVersionsPerModel) {
  const std::string info = R"({"Name": "BFB File Content", "Members": [
    {"Name": "BF3_ATF", "Version": "v2.2(release):4.9.1-21-gfc25b08d9"},
    {"Name": "BF2_ATF", "Version": "v2.2(release):4.9.1-21-gaaaaaaa"},
    {"Name": "BF3_BSP", "Version": " 4.9.1.13442 "},
    {"Name": "BF3_NIC_FW", "Version": "32.43.2402"},
    {"Name": "BF3_OS", "Version": "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod"},
    {"Name": "DOCA", "Version": "2.9.1"},
    {"Name": "BF3_UEFI", "Version": ""},
    {"Id": "8"}]})";
  BfbVersions v = Scan({{kInfo, ToBytes(info)}});
  EXPECT_EQ(v.info_status, "ok");
  EXPECT_EQ(Get(v, "atf", "BlueField-3"), "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(Get(v, "atf", "BlueField-2"), "v2.2(release):4.9.1-21-gaaaaaaa");
  EXPECT_EQ(Get(v, "bsp", "BlueField-3"), "4.9.1.13442");  // trimmed
  EXPECT_EQ(Get(v, "bsp", "BlueField-2"), "(none)");
  EXPECT_EQ(Get(v, "nic-fw", "BlueField-3"), "32.43.2402");
  EXPECT_EQ(Get(v, "os", "BlueField-3"), "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
  EXPECT_EQ(Get(v, "uefi", "BlueField-3"), "(none)");
  ASSERT_EQ(v.other.size(), 1u);
  EXPECT_EQ(v.other[0].name, "DOCA");
  EXPECT_THAT(testing::PrintToString(v.notes), HasSubstr("BF3_UEFI) has an empty Version"));
  EXPECT_THAT(testing::PrintToString(v.notes), HasSubstr("Members[7] has no string Name"));
}

TEST(BfbVersionsTest, StringsWinOverTheInfoImageAndDifferencesAreNoted) {
  Bytes bl31 = Cat({ToBytes("v2.2(release):4.9.1-21-gfc25b08d9"), Bytes{0}});
  Bytes bl33 = Cat({Utf16("BlueField:4.9.1-36-g0c3239837a"), Bytes{0, 0}});
  // A builder that cut bfver's line after the last ':' for ATF (no note),
  // and a UEFI that disagrees (a note).
  const std::string info = R"({"Members": [
    {"Name": "BF3_ATF", "Version": "4.9.1-21-gfc25b08d9"},
    {"Name": "BF3_UEFI", "Version": "4.9.1-99-gdeadbeef"}]})";
  BfbVersions v = Scan({{kBl31, bl31}, {kBl33, bl33}, {kInfo, ToBytes(info)}});
  EXPECT_EQ(Get(v, "atf", "BlueField-3"), "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(Get(v, "uefi", "BlueField-3"), "4.9.1-36-g0c3239837a");
  ASSERT_EQ(v.notes.size(), 1u) << testing::PrintToString(v.notes);
  EXPECT_THAT(v.notes[0], HasSubstr("says uefi \"4.9.1-99-gdeadbeef\""));
  EXPECT_THAT(v.notes[0], HasSubstr("the strings are used"));
}

TEST(BfbVersionsTest, AnInfoImageThatCannotBeReadIsANoteNeverAnError) {
  struct Case {
    std::string info, status, note;
  };
  for (const Case& c : {Case{"{\"release\": \"x\"}\n", "malformed", "no \"Members\" list"},
                        Case{"not json", "malformed", "is not JSON"}}) {
    BfbVersions v = Scan({{kInfo, ToBytes(c.info)}});
    EXPECT_EQ(v.info_status, c.status) << c.info;
    EXPECT_TRUE(v.components.empty());
    ASSERT_EQ(v.notes.size(), 1u);
    EXPECT_THAT(v.notes[0], HasSubstr(c.note));
  }
  Bytes big((1u << 20) + 1, ' ');
  BfbVersions v = Scan({{kInfo, big}});
  EXPECT_EQ(v.info_status, "too-large");
  EXPECT_THAT(v.notes[0], HasSubstr("larger than 1 MiB"));
}

TEST(BfbVersionsTest, JsonAndTextForms) {
  Bytes bl31 = Cat({ToBytes("v2.2(debug):4.9.1"), Bytes{0}});
  BfbVersions v = Scan({{kBl31, bl31}});
  nlohmann::json j = BfbVersionsJson(v);
  EXPECT_EQ(j["info"], "absent");
  EXPECT_EQ(j["components"][0]["component"], "atf");
  EXPECT_TRUE(j["components"][0]["model"].is_null());
  EXPECT_THAT(FormatBfbVersions(v), HasSubstr("atf     v2.2(debug):4.9.1"));
  EXPECT_THAT(FormatBfbVersions(BfbVersions{}), HasSubstr("none found"));
}

}  // namespace
}  // namespace dpuaudit::bluefield
