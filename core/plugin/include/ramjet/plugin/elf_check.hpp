// Reads an ELF header before dlopen so a library built for another machine or word size fails with a clear
// reason instead of a cryptic loader message (or worse).
#pragma once

#include <filesystem>
#include <string>

namespace ramjet::core {

// Empty when `file` is an ELF shared object this process can load; otherwise the reason it is not.
std::string check_elf_compatible(const std::filesystem::path& file);

}  // namespace ramjet::core
