# Install rules and the Debian package (docs/operations.md, Packaging and containers).
#   cmake -S . -B build/deb -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build/deb && (cd build/deb && cpack -G DEB)   -> shardgate_<version>_amd64.deb,
#   libshardgate1_…, libshardgate-dev_… and python3-shardgate_<version>_all.deb
# Every destination is relative to the prefix, so `cmake --install B --prefix DIR` works
# unprivileged; the units are configured with the prefix's bindir, so they match the binaries.
include(GNUInstallDirs)

# lib/, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu under /usr): /usr/lib/systemd/system.
set(SHARDGATE_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "Where the systemd units are installed, relative to the prefix")
set(SHARDGATE_PKG_DIR ${CMAKE_CURRENT_LIST_DIR})
set(SHARDGATE_UNIT_OUT ${CMAKE_CURRENT_BINARY_DIR}/packaging)

install(TARGETS shardgate shardgate-health RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/man/shardgate.1 ${PROJECT_SOURCE_DIR}/man/shardgate-health.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/man/shardgate-contract.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5
        COMPONENT server)
# The example contract, membership and batch; postinst copies the first two to /etc/shardgate
# when they are not there (they are the operator's files from then on).
install(FILES ${PROJECT_SOURCE_DIR}/conf/dispatch.env ${PROJECT_SOURCE_DIR}/input/shards.json
              ${PROJECT_SOURCE_DIR}/input/changes.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/examples COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/docs/openapi.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate
        COMPONENT server)
# Monitoring (docs/operations.md §11): the alert rules with their unit tests, and the dashboard.
install(FILES ${SHARDGATE_PKG_DIR}/prometheus/shardgate-rules.yml
              ${SHARDGATE_PKG_DIR}/prometheus/shardgate-rules.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/prometheus COMPONENT server)
install(FILES ${SHARDGATE_PKG_DIR}/grafana/shardgate.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/grafana COMPONENT server)
foreach(unit shardgate.service shardgate-health.service)
  configure_file(${SHARDGATE_PKG_DIR}/${unit}.in ${SHARDGATE_UNIT_OUT}/${unit} @ONLY)
  install(FILES ${SHARDGATE_UNIT_OUT}/${unit} DESTINATION ${SHARDGATE_SYSTEMD_UNITDIR}
          COMPONENT server)
endforeach()

# The Python package (docs/tools.md §14): its modules where Debian's python3 finds them, and
# the three commands as small scripts (what pip would write for the entry points).
set(SHARDGATE_PYTHON_DIR "lib/python3/dist-packages" CACHE STRING
    "Where the Python package shardgate is installed, relative to the prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/client/shardgate DESTINATION ${SHARDGATE_PYTHON_DIR}
        COMPONENT python PATTERN __pycache__ EXCLUDE)
foreach(entry "shardgate-probe:probe" "shardgate-post-batch:post_batch"
              "shardgate-consume:consume")
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 command)
  list(GET entry 1 module)
  file(WRITE ${SHARDGATE_UNIT_OUT}/${command}
       "#!/usr/bin/python3\nimport sys\n\nfrom shardgate.${module} import console\n\n"
       "if __name__ == \"__main__\":\n    sys.exit(console())\n")
  install(PROGRAMS ${SHARDGATE_UNIT_OUT}/${command} DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT python)
endforeach()

# CPack: four .debs, as Debian splits a daemon with a library (docs/decisions.md §40):
#   shardgate          the daemons, units, man pages, examples, monitoring (component server)
#   libshardgate1      libshardgate.so.1 (lib)
#   libshardgate-dev   the header, the libshardgate.so link, shardgate.pc (dev)
#   python3-shardgate  the Python package and its three commands (python)
set(CPACK_PACKAGE_NAME shardgate)
set(CPACK_PACKAGE_VENDOR shardgate)
set(CPACK_PACKAGE_CONTACT "shardgate maintainers <shardgate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "consistent-hash shard dispatch gateway with durable receipts")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server lib dev python)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps derives the library dependencies from the binaries (libc6, libssl3,
# libmicrohttpd12, libjansson4, libsystemd0, zlib1g and libisal2 for the journal's line checksums,
# librocksdb7.8 for the idempotency index, libcurl4 for `shardgate admin`, and libzstd1 for
# shardgate-health's archives).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME shardgate)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
set(CPACK_COMPONENT_SERVER_DESCRIPTION "consistent-hash shard dispatch gateway with durable receipts\n"
    "shardgate places every change of a batch on a shard with a ketama\n"
    "ring and answers with a durable, fdatasync'ed receipt. shardgate-health is an\n"
    "independent verifier of every receipt in the journal.")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${SHARDGATE_PKG_DIR}/debian/postinst ${SHARDGATE_PKG_DIR}/debian/prerm
    ${SHARDGATE_PKG_DIR}/debian/postrm)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libshardgate1)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# shlibs for the packages built against it, and the ldconfig trigger
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_COMPONENT_LIB_DESCRIPTION "shardgate's placement as a C library\n"
    "libshardgate places keys and batches exactly as the shardgate gateway does\n"
    "(the gateway's own code), and computes the movement plan between memberships.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libshardgate-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_DEV_DESCRIPTION "shardgate's placement as a C library (development files)\n"
    "The header shardgate.h, the libshardgate.so link and shardgate.pc for pkg-config.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-shardgate)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.10)")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "shardgate's placement and verification for Python\n"
    "The package shardgate (ring, receipt, verify), independent of the gateway, and the\n"
    "commands shardgate-probe, shardgate-post-batch and shardgate-consume.")
include(CPack)
