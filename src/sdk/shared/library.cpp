// libtorchless.so is the layers' archives linked whole (src/sdk/CMakeLists.txt); this file is
// only the shared library target's own source, which CMake requires.
extern "C" int torchless_shared_library_marker() { return 1; }
