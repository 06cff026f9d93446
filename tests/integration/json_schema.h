// Validates the CLI's --json outputs against docs/schemas/<name>.schema.json
// with Debian's python3-jsonschema (an independent validator).
#ifndef DPUAUDIT_TESTS_INTEGRATION_JSON_SCHEMA_H_
#define DPUAUDIT_TESTS_INTEGRATION_JSON_SCHEMA_H_

#include <string>

#include "common/files.h"
#include "integration/harness.h"

namespace dpuaudit::itest {

inline bool HaveJsonschema() {
  return Exec({"/usr/bin/env", "python3", "-c", "import jsonschema"}).exit_code == 0;
}

// "" when `json` validates; else the validator's message. `scratch_dir`
// holds the document while it is checked.
inline std::string SchemaErrors(const std::string& scratch_dir, const std::string& name,
                                const std::string& json) {
  std::string doc = scratch_dir + "/" + name + ".out.json";
  if (!WriteFileAtomic(doc, AsBytes(json), 0600).ok()) return "cannot write " + doc;
  Proc p = Exec({"/usr/bin/env", "python3", "-c",
                 "import json,os,sys,warnings,jsonschema\n"
                 "warnings.simplefilter('ignore')\n"
                 "schema = json.load(open(sys.argv[1]))\n"
                 "base = 'file://' + os.path.dirname(os.path.abspath(sys.argv[1])) + '/'\n"
                 "resolver = jsonschema.RefResolver(base_uri=base, referrer=schema)\n"
                 "jsonschema.validate(json.load(open(sys.argv[2])), schema, resolver=resolver)",
                 kSrc + "/docs/schemas/" + name + ".schema.json", doc});
  return p.exit_code == 0 ? "" : p.err + p.out;
}

}  // namespace dpuaudit::itest

#endif  // DPUAUDIT_TESTS_INTEGRATION_JSON_SCHEMA_H_
