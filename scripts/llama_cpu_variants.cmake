# Included by llama-cpp-python's CMakeLists.txt right after its project() call, through
#   CMAKE_ARGS="-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_PROJECT_llama_cpp_INCLUDE=<this file>"
# (see scripts/setup.sh). With GGML_CPU_ALL_VARIANTS llama.cpp builds one CPU backend module per x86-64 level
# (ggml-cpu-x64, -haswell, -skylakex, -zen4, ...) and picks the best one for the CPU at run time; llama-cpp-python's
# own install list names only `ggml-cpu`, so this installs the variants next to libllama, where
# hf_rgda.llm.engine loads them from (ggml_backend_load_all_from_path). Runs at the end of the top-level file.
function(hf_rgda_install_cpu_variants)
    get_property(targets DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/vendor/llama.cpp/ggml/src" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
        get_target_property(type ${target} TYPE)
        if(target MATCHES "^ggml-cpu-" AND type STREQUAL "MODULE_LIBRARY")  # not the -feats object libraries
            set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN" BUILD_WITH_INSTALL_RPATH TRUE)
            install(TARGETS ${target} LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/llama_cpp/lib)
            message(STATUS "hf_rgda: installing CPU backend variant ${target}")
        endif()
    endforeach()
endfunction()
cmake_language(DEFER CALL hf_rgda_install_cpu_variants)
