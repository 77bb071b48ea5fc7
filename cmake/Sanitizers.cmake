# TWINFLOW_SANITIZE=ON: every C++ file built with AddressSanitizer and UndefinedBehaviorSanitizer
# (any undefined behaviour is fatal), for `make test-sanitize`. With Clang it also instruments
# the code for libFuzzer and builds the fuzz targets of tests/fuzz (`make fuzz`).
option(TWINFLOW_SANITIZE "Build with ASan and UBSan (and libFuzzer targets under Clang)" OFF)
set(TWINFLOW_FUZZ OFF)
if(TWINFLOW_SANITIZE)
  set(sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${sanitizers}>")
  add_link_options(${sanitizers})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
    set(TWINFLOW_FUZZ ON)
  endif()
endif()
