# SPDX-License-Identifier: MIT
# Release checks (label release): the examples built against an installed tree, the man
# pages against the code, and SPDX license headers.
find_program(ELK_BASH_PROGRAM bash REQUIRED)

# A sanitizer or fuzzer build installs instrumented libraries that plain programs cannot
# link; the plain build runs this test.
if(NOT ELK_SANITIZE AND NOT ELK_FUZZ AND TARGET elk_port_posix AND TARGET elk_port_mbedtls
   AND TARGET elk_port_fence_file)
  add_test(NAME release.examples
           COMMAND ${ELK_BASH_PROGRAM} ${PROJECT_SOURCE_DIR}/examples/test-examples.sh
                   ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(release.examples PROPERTIES LABELS "integration;release" TIMEOUT 300)
endif()

# The man pages name every config key (firmware/common/conf_keys.c), elk command
# (firmware/elk/main.c) and --help option of both programs.
if(TARGET elkd AND TARGET elk_cli)
  find_program(ELK_PYTHON3 python3 REQUIRED)
  add_test(NAME release.man_pages
           COMMAND ${ELK_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/check-man-pages.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:elk_cli> $<TARGET_FILE:elkd>)
  set_tests_properties(release.man_pages PROPERTIES LABELS release TIMEOUT 60)
endif()

# SPDX-License-Identifier: MIT in every source file (lib port firmware tests examples
# scripts cmake, the top-level build files); scripts/add-spdx.py adds the line where missing.
add_test(NAME release.spdx COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/check-spdx.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(release.spdx PROPERTIES LABELS release TIMEOUT 60)

# The C sources follow .clang-format (skipped, 77, without clang-format 14).
add_test(NAME style.clang_format COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/check-format.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(style.clang_format PROPERTIES LABELS release TIMEOUT 120 SKIP_RETURN_CODE 77)
# Issue 29: the release tarball (scripts/dist.sh) is reproducible, and the OpenWrt Makefile it
# writes carries the tarball's sha256 (77: not a git checkout, skipped).
add_test(NAME release.dist COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/check-dist.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(release.dist PROPERTIES LABELS release TIMEOUT 120 SKIP_RETURN_CODE 77)
