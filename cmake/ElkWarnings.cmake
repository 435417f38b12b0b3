# SPDX-License-Identifier: MIT
# lib/ and port/ are strict C99; firmware/ and tests may use C11.
function(elk_strict_c99 target)
  set_target_properties(${target} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -pedantic)
endfunction()

function(elk_c11 target)
  set_target_properties(${target} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS ON)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()
