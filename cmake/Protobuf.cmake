# twinflow_proto_sources(OUT_VAR PROTO): runs Debian's protoc on PROTO (a path under the source
# tree) and sets OUT_VAR to the generated .pb.cc, which lands in the build tree at the same
# relative path, so "engine/plan/plan.pb.h" is included as such. Generated code is not ours to
# warn about.
function(twinflow_proto_sources out_var proto)
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${proto})
  get_filename_component(dir ${relative} DIRECTORY)
  get_filename_component(name ${relative} NAME_WE)
  set(gen_dir ${PROJECT_BINARY_DIR}/${dir})
  add_custom_command(
    OUTPUT ${gen_dir}/${name}.pb.cc ${gen_dir}/${name}.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND protobuf::protoc --cpp_out=${PROJECT_BINARY_DIR} -I ${PROJECT_SOURCE_DIR} ${proto}
    DEPENDS ${proto}
    COMMENT "protoc ${relative}")
  set_source_files_properties(${gen_dir}/${name}.pb.cc PROPERTIES COMPILE_OPTIONS "-w")
  set(${out_var} ${gen_dir}/${name}.pb.cc PARENT_SCOPE)
endfunction()
