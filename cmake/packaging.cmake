# Install rules and Debian packages (CPack DEB), issue 18.
#
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build
#   (cd build && cpack -G DEB)          # or scripts/package.sh
#
# Three packages, one CPack component each:
#   dpuaudit-agent     the agent (runs on the BlueField's Arm cores; amd64 too,
#                      for tests), its systemd unit and /etc/dpuaudit/agent.env
#   dpuaudit-verifier  the verifier, its unit, the sysusers.d entry for the
#                      `dpuaudit` system user, /etc/dpuaudit/verifier.toml and
#                      the shipped policies
#   dpuaudit           the operator CLI
# Library dependencies are computed by dpkg-shlibdeps from the binaries
# (CPACK_DEBIAN_PACKAGE_SHLIBDEPS), so a cross build declares the arm64
# libraries it linked. Units go to /lib/systemd/system, where Debian 12's
# systemd and debhelper put them. Maintainer scripts: packaging/debian/.
include(GNUInstallDirs)

set(DPUAUDIT_UNIT_DIR "/lib/systemd/system")

install(TARGETS dpuaudit-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/dpuaudit-agent.service
        DESTINATION ${DPUAUDIT_UNIT_DIR} COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/agent.env
        DESTINATION /etc/dpuaudit COMPONENT agent)
# Debian's changelog, compressed as policy asks (gzip -9n: no name or time,
# so the package is reproducible).
set(DPUAUDIT_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/packaging)
execute_process(COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/debian/changelog
                OUTPUT_FILE ${DPUAUDIT_CHANGELOG_GZ} RESULT_VARIABLE DPUAUDIT_GZIP_RC)
if(NOT DPUAUDIT_GZIP_RC EQUAL 0)
  message(FATAL_ERROR "gzip of packaging/debian/changelog failed")
endif()
set(DPUAUDIT_DOC_FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
    ${DPUAUDIT_CHANGELOG_GZ} ${PROJECT_SOURCE_DIR}/README.md)
install(FILES ${DPUAUDIT_DOC_FILES}
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/dpuaudit-agent COMPONENT agent)

install(TARGETS dpuaudit-verifier RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT verifier)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/dpuaudit-verifier.service
        DESTINATION ${DPUAUDIT_UNIT_DIR} COMPONENT verifier)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/dpuaudit.sysusers.conf
        DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d RENAME dpuaudit.conf
        COMPONENT verifier)
install(FILES ${PROJECT_SOURCE_DIR}/docs/examples/verifier.toml
        DESTINATION /etc/dpuaudit COMPONENT verifier)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/policies/
        DESTINATION /etc/dpuaudit/policies COMPONENT verifier
        FILES_MATCHING PATTERN "*.json")
install(FILES ${DPUAUDIT_DOC_FILES}
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/dpuaudit-verifier COMPONENT verifier)

install(TARGETS dpuaudit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES ${DPUAUDIT_DOC_FILES}
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/dpuaudit COMPONENT cli)

# Lintian overrides, each with its reason (packaging/debian/lintian/).
foreach(comp_pkg agent:dpuaudit-agent verifier:dpuaudit-verifier cli:dpuaudit)
  string(REPLACE ":" ";" cp ${comp_pkg})
  list(GET cp 0 comp)
  list(GET cp 1 pkg)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/lintian/${pkg}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides COMPONENT ${comp})
endforeach()

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "dpuaudit")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "dpuaudit")
set(CPACK_PACKAGE_CONTACT "dpuaudit maintainers <dpuaudit@example.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL agent verifier cli)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/dpuaudit/dpuaudit")
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME "dpuaudit-agent")
set(CPACK_DEBIAN_AGENT_DESCRIPTION
    "BlueField DPU attestation agent\nThe dpuaudit agent runs on the DPU's Arm cores. It measures the boot\nchain and firmware, reads the host-restriction and mode settings, can\nquote a TPM, and sends a signed report bound to a verifier nonce.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/packaging/debian/agent/conffiles;${PROJECT_SOURCE_DIR}/packaging/debian/agent/postinst;${PROJECT_SOURCE_DIR}/packaging/debian/agent/prerm;${PROJECT_SOURCE_DIR}/packaging/debian/agent/postrm")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_VERIFIER_PACKAGE_NAME "dpuaudit-verifier")
set(CPACK_DEBIAN_VERIFIER_DESCRIPTION
    "BlueField DPU attestation verifier\nThe dpuaudit verifier re-derives every finding from an agent's signed\nevidence, appraises it against policy and reference values, and\ndecides whether a node may join a tenant's network (signed EAR results,\nadmission, webhooks, a tamper-evident audit log).")
set(CPACK_DEBIAN_VERIFIER_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/packaging/debian/verifier/conffiles;${PROJECT_SOURCE_DIR}/packaging/debian/verifier/postinst;${PROJECT_SOURCE_DIR}/packaging/debian/verifier/prerm;${PROJECT_SOURCE_DIR}/packaging/debian/verifier/postrm")
set(CPACK_DEBIAN_VERIFIER_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# postinst falls back to adduser where systemd-sysusers is absent.
set(CPACK_DEBIAN_VERIFIER_PACKAGE_DEPENDS "adduser")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME "dpuaudit")
set(CPACK_DEBIAN_CLI_DESCRIPTION
    "BlueField DPU attestation: operator command line\ndpuaudit gates a provisioning step on a node's attestation (exit\ncodes), manages nodes and reference values, inspects reports and BFB\nimages, and exports and verifies audit bundles offline.")

include(CPack)
