# Install rules and the Debian package (docs/operations.md, Packaging and containers).
#   cmake -S . -B build/deb -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build/deb && (cd build/deb && cpack -G DEB)   -> shardgate_<version>_amd64.deb
# Every destination is relative to the prefix, so `cmake --install B --prefix DIR` works
# unprivileged; the units are configured with the prefix's bindir, so they match the binaries.
include(GNUInstallDirs)

# lib/, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu under /usr): /usr/lib/systemd/system.
set(SHARDGATE_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "Where the systemd units are installed, relative to the prefix")
set(SHARDGATE_PKG_DIR ${CMAKE_CURRENT_LIST_DIR})
set(SHARDGATE_UNIT_OUT ${CMAKE_CURRENT_BINARY_DIR}/packaging)

install(TARGETS shardgate shardgate-health RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/man/shardgate.1 ${PROJECT_SOURCE_DIR}/man/shardgate-health.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/man/shardgate-contract.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
# The example contract, membership and batch; postinst copies the first two to /etc/shardgate
# when they are not there (they are the operator's files from then on).
install(FILES ${PROJECT_SOURCE_DIR}/conf/dispatch.env ${PROJECT_SOURCE_DIR}/input/shards.json
              ${PROJECT_SOURCE_DIR}/input/changes.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/examples)
install(FILES ${PROJECT_SOURCE_DIR}/docs/openapi.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate)
# Monitoring (docs/operations.md §11): the alert rules with their unit tests, and the dashboard.
install(FILES ${SHARDGATE_PKG_DIR}/prometheus/shardgate-rules.yml
              ${SHARDGATE_PKG_DIR}/prometheus/shardgate-rules.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/prometheus)
install(FILES ${SHARDGATE_PKG_DIR}/grafana/shardgate.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardgate/grafana)
foreach(unit shardgate.service shardgate-health.service)
  configure_file(${SHARDGATE_PKG_DIR}/${unit}.in ${SHARDGATE_UNIT_OUT}/${unit} @ONLY)
  install(FILES ${SHARDGATE_UNIT_OUT}/${unit} DESTINATION ${SHARDGATE_SYSTEMD_UNITDIR})
endforeach()

# CPack: one .deb, shardgate_<version>_<arch>.deb, Debian 12 runtime dependencies.
set(CPACK_PACKAGE_NAME shardgate)
set(CPACK_PACKAGE_VENDOR shardgate)
set(CPACK_PACKAGE_CONTACT "shardgate maintainers <shardgate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "consistent-hash shard dispatch gateway with durable receipts")
set(CPACK_PACKAGE_DESCRIPTION "shardgate places every change of a batch on a shard with a ketama\n"
    "ring and answers with a durable, fdatasync'ed receipt. shardgate-health is an\n"
    "independent verifier of every receipt in the journal.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps derives the library dependencies from the binaries (libc6, libssl3,
# libmicrohttpd12, libjansson4, libsystemd0, zlib1g for the journal's line checksums, librocksdb7.8
# for the idempotency index, libcurl4 for `shardgate admin`, and libzstd1 for shardgate-health's
# archives).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${SHARDGATE_PKG_DIR}/debian/postinst ${SHARDGATE_PKG_DIR}/debian/prerm
    ${SHARDGATE_PKG_DIR}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
