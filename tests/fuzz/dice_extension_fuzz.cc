// Fuzz target: dpuaudit::spdm::ParseDiceExtensionValue (TCG DICE evidence
// extensions of SPDM certificate chains, src/spdm/dice.h) under each OID it
// reads: DiceTcbInfo, the FWID draft form, FWID lists and MultiTcbInfo.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/bytes.h"
#include "spdm/dice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpuaudit::ByteView in(data, data == nullptr ? 0 : size);
  for (const char* oid : {"2.23.133.5.4.1", "2.23.133.5.4.1.1", "2.23.133.5.4.5"}) {
    auto tcbs = dpuaudit::spdm::ParseDiceExtensionValue(oid, in);
    if (tcbs.ok()) {
      for (const auto& t : *tcbs) {
        if (t.reading != "tcb_info" && t.reading != "fwid_draft" &&
            t.reading != "fwid_list") {
          std::abort();
        }
        if (t.reading != "tcb_info" && t.fwids.empty()) std::abort();
      }
    } else if (tcbs.status().message().empty()) {
      std::abort();
    }
  }
  return 0;
}
