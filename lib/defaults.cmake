# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The integer defaults and limits of lib/include/seacache/defaults.h as CMake
# variables of the same names (SC_CSI_PORT, ...), read from the header, so
# that the tests' environment and the .conf files configure_file makes take
# them from there and spell none.  SC_DEFAULT_NAMES lists them in the
# header's order; SC_DEFAULTS_SH holds them as NAME=VALUE lines, the form
# `seacachectl defaults` prints (tests/seacachectl compares the two).
# A #define this cannot read stops the configure rather than be guessed.
set(SC_DEFAULTS_H ${CMAKE_CURRENT_LIST_DIR}/include/seacache/defaults.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SC_DEFAULTS_H})
file(STRINGS ${SC_DEFAULTS_H} _sc_lines REGEX "^#define SC_[A-Z0-9_]+[ \t]")
set(SC_DEFAULT_NAMES "")
set(SC_DEFAULTS_SH "")
foreach(_sc_line IN LISTS _sc_lines)
  string(REGEX MATCH "^#define (SC_[A-Z0-9_]+)[ \t]+(.*)$" _sc_m "${_sc_line}")
  set(_sc_name ${CMAKE_MATCH_1})
  string(REGEX REPLACE "/\\*.*\\*/" "" _sc_expr "${CMAKE_MATCH_2}")
  string(STRIP "${_sc_expr}" _sc_expr)
  if(_sc_expr MATCHES "^\"")
    continue()  # a string: C only
  endif()
  # 17u, 1ull: C's suffixes mean nothing to math(EXPR)
  string(REGEX REPLACE "([0-9])[uUlL]+" "\\1" _sc_expr "${_sc_expr}")
  if(NOT _sc_expr MATCHES "^[0-9()<*+ ]+$")
    message(FATAL_ERROR "${SC_DEFAULTS_H}: ${_sc_name}: '${_sc_expr}' is not "
                        "an integer this file can read (see its comment)")
  endif()
  math(EXPR ${_sc_name} "${_sc_expr}")
  list(APPEND SC_DEFAULT_NAMES ${_sc_name})
  string(APPEND SC_DEFAULTS_SH "${_sc_name}=${${_sc_name}}\n")
endforeach()
if(NOT SC_CSI_PORT)
  message(FATAL_ERROR "${SC_DEFAULTS_H}: no SC_CSI_PORT read")
endif()
unset(_sc_lines)
unset(_sc_line)
unset(_sc_m)
unset(_sc_name)
unset(_sc_expr)
