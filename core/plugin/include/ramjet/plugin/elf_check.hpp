// Reads a plugin library's ELF header and tables before dlopen, so a library built for another machine or word
// size, or a truncated or corrupt file, fails with a clear reason instead of a cryptic loader message or a signal
// inside dlopen (the loader maps segments straight from the file: bytes promised past its end are a SIGBUS).
#pragma once

#include <filesystem>
#include <string>

namespace ramjet::core {

// Empty when `file` exists and is a regular file; otherwise why it cannot be a library ("library file not found",
// "library file is a directory, not a regular file", ...). Never opens the file, so a FIFO cannot block.
std::string library_file_problem(const std::filesystem::path& file);

// Empty when `file` is an ELF shared object this process can load: the header matches this host, and the program
// headers, every segment's file bytes, the section headers and the dynamic segment lie inside the file. Otherwise
// the reason, naming the ELF field and its byte offset; the caller names the file.
std::string check_elf_compatible(const std::filesystem::path& file);

}  // namespace ramjet::core
