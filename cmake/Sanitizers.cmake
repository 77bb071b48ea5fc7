# TWINFLOW_SANITIZE=ON: every C++ file built with AddressSanitizer and UndefinedBehaviorSanitizer
# (any undefined behaviour is fatal), for `make test-sanitize`. With Clang it also instruments
# the code for libFuzzer and builds the fuzz targets of tests/fuzz (`make fuzz`).
option(TWINFLOW_SANITIZE "Build with ASan and UBSan (and libFuzzer targets under Clang)" OFF)
set(TWINFLOW_FUZZ OFF)
if(TWINFLOW_SANITIZE)
  # CMAKE_BUILD_TYPE=Sanitize: -O1 and line tables only, half the build time of -O2 -g with
  # the same symbolized reports.
  set(CMAKE_CXX_FLAGS_SANITIZE "-O1 -gline-tables-only")
  set(CMAKE_C_FLAGS_SANITIZE "-O1 -gline-tables-only")
  set(sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${sanitizers}>")
  add_link_options(${sanitizers})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
    set(TWINFLOW_FUZZ ON)
  endif()
endif()
