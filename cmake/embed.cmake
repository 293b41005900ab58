# Writes OUT, a C file defining `const struct gi_embedded VAR[]` from FILES
# (a ;-list, relative to BASE), each NUL-terminated, names sorted.
# Usage: cmake -DOUT=... -DVAR=... -DBASE=... -DFILES=... -P embed.cmake
list(SORT FILES)
set(body "#include \"store/embedded.h\"\n")
set(table "const struct gi_embedded ${VAR}[] = {\n")
set(i 0)
foreach(f IN LISTS FILES)
  file(READ "${BASE}/${f}" hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
  string(APPEND body "static const unsigned char ${VAR}_${i}[] = {${arr}0x00};\n")
  string(APPEND table "    {\"${f}\", ${VAR}_${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND table "    {0, 0, 0},\n};\n")
file(WRITE "${OUT}.tmp" "${body}${table}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
