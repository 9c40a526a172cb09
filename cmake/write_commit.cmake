# Writes OUT (a header defining TILESIM_COMMIT) from `git describe` of SRC, at build time, and
# only when the commit changed, so `tilesim --version` names the commit it was built from without
# rebuilding anything else. Outside a git checkout the commit is "unknown".
execute_process(COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit unknown)
endif()
set(text "#pragma once\n#define TILESIM_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
