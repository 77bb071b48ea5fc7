# jemalloc, linked statically into the executables that compile and simulate large Plans
# (`twinflow`, the scale benchmarks): compiling a Plan of 1,024 devices makes and frees millions
# of small objects (regions, boxing steps, protobuf messages), and glibc's allocator spent about
# a third of `twinflow tune`'s time in malloc, free and its consolidation of freed chunks;
# jemalloc's per-size arenas take 20% off the tune (bench/tune_bench.sh). Static (the _pic
# archive), so the GPU bundle (scripts/gpu-bundle) needs no extra shared library. Not in
# sanitizer builds, whose runtime must own malloc. TWINFLOW_JEMALLOC=OFF keeps glibc's.
option(TWINFLOW_JEMALLOC "Link jemalloc into the twinflow executable and the benchmarks" ON)
set(TWINFLOW_JEMALLOC_ARCHIVE "")
if(TWINFLOW_JEMALLOC AND NOT TWINFLOW_SANITIZE)
  find_library(TWINFLOW_JEMALLOC_ARCHIVE_PATH NAMES libjemalloc_pic.a)
  if(TWINFLOW_JEMALLOC_ARCHIVE_PATH)
    set(TWINFLOW_JEMALLOC_ARCHIVE "${TWINFLOW_JEMALLOC_ARCHIVE_PATH}")
    message(STATUS "twinflow: jemalloc ${TWINFLOW_JEMALLOC_ARCHIVE}")
  else()
    message(STATUS "twinflow: jemalloc not found (libjemalloc-dev); glibc's malloc")
  endif()
endif()

# Links jemalloc into `target` (an executable) where the build has it.
function(twinflow_fast_malloc target)
  if(TWINFLOW_JEMALLOC_ARCHIVE)
    find_package(Threads REQUIRED)
    target_link_libraries(${target} PRIVATE ${TWINFLOW_JEMALLOC_ARCHIVE} Threads::Threads
                          ${CMAKE_DL_LIBS})
  endif()
endfunction()
