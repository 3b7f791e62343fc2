# cmake -DSOURCE_DIR=<repo> -DOUT=<header> -P git_commit.cmake: writes
#   #define SEDNA_GIT_COMMIT "<git describe --always --dirty>"
# ("unknown" when SOURCE_DIR is not a git checkout or git is missing), and leaves OUT untouched
# when its content would not change, so that a build recompiles only when the commit changes.
find_program(_git git)
set(_commit "")
if(_git)
  execute_process(COMMAND ${_git} -C ${SOURCE_DIR} describe --always --dirty
                  OUTPUT_VARIABLE _commit RESULT_VARIABLE _rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    set(_commit "")
  endif()
endif()
if(_commit STREQUAL "")
  set(_commit "unknown")
endif()
set(_content "#define SEDNA_GIT_COMMIT \"${_commit}\"\n")
set(_old "")
if(EXISTS ${OUT})
  file(READ ${OUT} _old)
endif()
if(NOT _old STREQUAL _content)
  file(WRITE ${OUT} "${_content}")
endif()
