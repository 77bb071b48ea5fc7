# Every third-party dependency of twinflow is found here, once, so that a missing Debian
# package fails at configure time with its name rather than deep inside a later issue's build.

find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Protobuf REQUIRED)
find_package(GTest REQUIRED)
find_package(rapidcheck REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_package(benchmark REQUIRED)
# toml++ (Debian's libtomlplusplus-dev, a shared library): torchtitan configs
# (models/torchtitan_config.h).
find_package(tomlplusplus REQUIRED)

# Python: Debian's interpreter, never the pyenv one on PATH (it cannot see Debian's packages).
set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python used for the twinflow module")
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 CONFIG REQUIRED)

# CUDA is optional: AUTO builds CUDA code when a toolkit is found, ON insists, OFF skips.
set(TWINFLOW_CUDA AUTO CACHE STRING "Build CUDA kernels: AUTO, ON or OFF")
set_property(CACHE TWINFLOW_CUDA PROPERTY STRINGS AUTO ON OFF)
set(TWINFLOW_HAVE_CUDA OFF)
if(NOT TWINFLOW_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Ampere (A100) and Hopper (H100/H200); must be set before enable_language(CUDA).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # nvcc 12+ compiles C++20, but CMake 3.25's NVIDIA module only knows flags up to C++17
    # (a CUDA_STANDARD 20 target then fails to configure); the flag is the same as C++17's.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(TWINFLOW_HAVE_CUDA ON)
    endif()
  endif()
  if(TWINFLOW_CUDA STREQUAL "ON" AND NOT TWINFLOW_HAVE_CUDA)
    message(FATAL_ERROR "TWINFLOW_CUDA=ON but no CUDA toolkit was found")
  endif()
endif()
# NCCL (engine/comm/nccl: collectives and SEND/RECV between the GPUs of different ranks): with
# CUDA, where its header and library are found (CUDA 13's are under /usr/local/cuda); without
# it, cuda devices of different ranks talk through host staging over MPI.
set(TWINFLOW_HAVE_NCCL OFF)
if(TWINFLOW_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib
               /usr/local/cuda/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TWINFLOW_HAVE_NCCL ON)
  endif()
endif()
message(STATUS "twinflow: CUDA ${TWINFLOW_HAVE_CUDA}, NCCL ${TWINFLOW_HAVE_NCCL}, "
               "MPI ${MPI_CXX_VERSION}, "
               "protobuf ${Protobuf_VERSION}, Python ${Python3_EXECUTABLE}")
# jemalloc, linked statically (the _pic archive) into the executables that compile and simulate
# large Plans (`twinflow`, the scale benchmarks: twinflow_fast_malloc below). Compiling a Plan of
# 1,024 devices makes and frees millions of small objects (regions, boxing steps, protobuf
# messages); glibc's allocator spent about a third of `twinflow tune`'s time in malloc, free and
# the consolidation of freed chunks, and jemalloc's per-size slabs take 20% off the tune
# (bench/tune_bench.sh). Static, so the GPU bundle (scripts/gpu-bundle) needs no extra shared
# library. Not in sanitizer builds, whose runtime must own malloc. TWINFLOW_JEMALLOC=OFF keeps
# glibc's.
option(TWINFLOW_JEMALLOC "Link jemalloc into the twinflow executable and the benchmarks" ON)
set(TWINFLOW_JEMALLOC_ARCHIVE "")
if(TWINFLOW_JEMALLOC AND NOT TWINFLOW_SANITIZE)
  find_library(TWINFLOW_JEMALLOC_ARCHIVE_PATH NAMES libjemalloc_pic.a)
  if(NOT TWINFLOW_JEMALLOC_ARCHIVE_PATH)
    message(FATAL_ERROR "jemalloc (libjemalloc_pic.a, Debian's libjemalloc-dev) not found; "
                        "scripts/install-deps installs it, or configure with -DTWINFLOW_JEMALLOC=OFF")
  endif()
  set(TWINFLOW_JEMALLOC_ARCHIVE "${TWINFLOW_JEMALLOC_ARCHIVE_PATH}")
  find_package(Threads REQUIRED)
endif()
message(STATUS "twinflow: jemalloc ${TWINFLOW_JEMALLOC_ARCHIVE}")

# Links jemalloc into `target` (an executable) where the build has it.
function(twinflow_fast_malloc target)
  if(TWINFLOW_JEMALLOC_ARCHIVE)
    target_link_libraries(${target} PRIVATE ${TWINFLOW_JEMALLOC_ARCHIVE} Threads::Threads
                          ${CMAKE_DL_LIBS})
  endif()
endfunction()
