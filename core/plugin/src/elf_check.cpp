#include "ramjet/plugin/elf_check.hpp"

#include <elf.h>

#include <array>
#include <cstring>
#include <fstream>

namespace ramjet::core {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__i386__)
constexpr uint16_t kHostMachine = EM_386;
#else
constexpr uint16_t kHostMachine = EM_NONE;
#endif
constexpr unsigned char kHostClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "AArch64";
    case EM_386: return "i386";
    case EM_ARM: return "ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC64";
    default: return "machine " + std::to_string(m);
  }
}

}  // namespace

std::string check_elf_compatible(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot open the library file";
  std::array<unsigned char, 20> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  if (in.gcount() < static_cast<std::streamsize>(head.size()))
    return "not an ELF file (only " + std::to_string(in.gcount()) + " bytes)";
  if (std::memcmp(head.data(), ELFMAG, SELFMAG) != 0) return "not an ELF file (bad magic at byte 0)";
  if (head[EI_CLASS] != kHostClass)
    return std::string("ELF class mismatch at byte 4: the library is ") +
           (head[EI_CLASS] == ELFCLASS32 ? "32-bit" : head[EI_CLASS] == ELFCLASS64 ? "64-bit" : "of unknown class") +
           ", this host is " + (kHostClass == ELFCLASS64 ? "64-bit" : "32-bit");
  if (head[EI_DATA] != ELFDATA2LSB) return "ELF byte order at byte 5 is not little-endian";
  const uint16_t type = static_cast<uint16_t>(head[16] | (head[17] << 8));
  if (type != ET_DYN) return "ELF type at byte 16 is " + std::to_string(type) + ", not a shared object (ET_DYN)";
  const uint16_t machine = static_cast<uint16_t>(head[18] | (head[19] << 8));
  if (kHostMachine != EM_NONE && machine != kHostMachine)  // on a machine this check does not know, dlopen decides
    return "ELF machine mismatch at byte 18: the library is for " + machine_name(machine) + ", this host is " +
           machine_name(kHostMachine);
  return {};
}

}  // namespace ramjet::core
