// Writing a file so that it appears complete or not at all.
#pragma once

#include <filesystem>
#include <string_view>

namespace tflite_plugin {

// Writes `bytes` to `path`.tmp, fsyncs it, renames it over `path` and fsyncs the directory. On any failure the
// temporary file is removed and a ramjet::Error (RAMJET_ERR_IO) names the path; `path` is left untouched.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace tflite_plugin
