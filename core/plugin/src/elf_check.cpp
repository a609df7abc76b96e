#include "ramjet/plugin/elf_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>  // ElfW: the ELF structures of this host's word size
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace ramjet::core {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Shdr = ElfW(Shdr);

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
// The structures below are read as this host lays them out, so the file must share its byte order.
constexpr unsigned char kHostData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
// Bytes the class, byte order, type and machine checks need.
constexpr uint64_t kIdentAndMachine = 20;

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

std::string segment_name(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_STACK: return "PT_GNU_STACK";
    case PT_GNU_RELRO: return "PT_GNU_RELRO";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
    default: return "type " + std::to_string(type);
  }
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

// "e_phoff (byte 32)": a header field and where it sits, so a reader can find it in a hex dump.
std::string header_field(const char* name, size_t offset) {
  return std::string(name) + " (byte " + std::to_string(offset) + ")";
}

std::string past_end(uint64_t end, uint64_t size) {
  return "ends at byte " + std::to_string(end) + ", past the end of the " + std::to_string(size) +
         "-byte file (truncated?)";
}

// Opened without blocking (a FIFO named like the library must not hang the host) and read with pread.
class LibraryFile {
 public:
  explicit LibraryFile(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)), error_(errno) {}
  ~LibraryFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LibraryFile(const LibraryFile&) = delete;
  LibraryFile& operator=(const LibraryFile&) = delete;

  // Empty when open and a regular file; sets size().
  std::string open_problem() {
    if (fd_ < 0) return "cannot open the library file: " + std::string(std::strerror(error_));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return "cannot stat the library file: " + std::string(std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return "library file is " + file_kind(st.st_mode) + ", not a regular file";
    size_ = static_cast<uint64_t>(st.st_size);
    return {};
  }
  uint64_t size() const { return size_; }
  // False on a short read: the file shrank under us, or an I/O error.
  bool read(uint64_t offset, void* out, size_t n) const {
    auto* bytes = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, bytes, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      bytes += got, offset += static_cast<uint64_t>(got), n -= static_cast<size_t>(got);
    }
    return true;
  }

 private:
  int fd_;
  int error_;
  uint64_t size_ = 0;
};

const char* const kShortRead = "the library file could not be read to the end of its ELF tables";

// Magic, class, byte order, type and machine: the checks that tell "not for this host" from "damaged".
std::string check_ident(const LibraryFile& file) {
  const uint64_t size = file.size();
  if (size < SELFMAG) return "not an ELF file (only " + std::to_string(size) + " bytes)";
  unsigned char head[kIdentAndMachine]{};
  if (!file.read(0, head, static_cast<size_t>(std::min(size, kIdentAndMachine)))) return kShortRead;
  if (std::memcmp(head, ELFMAG, SELFMAG) != 0) return "not an ELF file (bad magic at byte 0)";
  if (size < kIdentAndMachine)
    return "truncated ELF header: the file has " + std::to_string(size) + " bytes, the header needs " +
           std::to_string(sizeof(Ehdr));
  if (head[EI_CLASS] != kHostClass)
    return std::string("ELF class mismatch at byte 4: the library is ") +
           (head[EI_CLASS] == ELFCLASS32 ? "32-bit" : head[EI_CLASS] == ELFCLASS64 ? "64-bit" : "of unknown class") +
           ", this host is " + (kHostClass == ELFCLASS64 ? "64-bit" : "32-bit");
  if (head[EI_DATA] != kHostData)
    return std::string("ELF byte order at byte 5 is not ") + (kHostData == ELFDATA2LSB ? "little" : "big") +
           "-endian like this host";
  const uint16_t type = static_cast<uint16_t>(head[16] | (head[17] << 8));
  if (type != ET_DYN) return "ELF type at byte 16 is " + std::to_string(type) + ", not a shared object (ET_DYN)";
  const uint16_t machine = static_cast<uint16_t>(head[18] | (head[19] << 8));
  if (kHostMachine != EM_NONE && machine != kHostMachine)  // on a machine this check does not know, dlopen decides
    return "ELF machine mismatch at byte 18: the library is for " + machine_name(machine) + ", this host is " +
           machine_name(kHostMachine);
  if (size < sizeof(Ehdr))
    return "truncated ELF header: the file has " + std::to_string(size) + " bytes, the header needs " +
           std::to_string(sizeof(Ehdr));
  return {};
}

std::string program_header_at(const Ehdr& h, size_t i, uint32_t type) {
  return "program header " + std::to_string(i) + " (" + segment_name(type) + ", at byte " +
         std::to_string(h.e_phoff + i * sizeof(Phdr)) + "): ";
}

// Segments that the loader, the unwinder or the TLS setup read from the loaded image rather than the file: outside
// every PT_LOAD they would be wild reads inside dlopen or at the first exception.
bool read_from_loaded_memory(uint32_t type) {
  return type == PT_DYNAMIC || type == PT_GNU_RELRO || type == PT_NOTE || type == PT_GNU_EH_FRAME ||
         type == PT_TLS || type == PT_GNU_PROPERTY;
}

// The index of the PT_LOAD whose memory holds [address, address + bytes), or -1.
long loaded_at(const std::vector<Phdr>& segments, uint64_t address, uint64_t bytes) {
  uint64_t end = 0;
  if (__builtin_add_overflow(address, bytes, &end)) return -1;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Phdr& load = segments[i];
    if (load.p_type == PT_LOAD && address >= load.p_vaddr && end <= load.p_vaddr + load.p_memsz)  // sum checked
      return static_cast<long>(i);
  }
  return -1;
}

// The program header table and every segment's file bytes inside the file (dlopen maps them: bytes promised past
// the end are a SIGBUS on first touch), PT_LOADs in ascending, disjoint memory as the loader assumes, and the
// segments read from memory (PT_DYNAMIC, PT_NOTE, ...) inside a PT_LOAD. Fills `segments`.
std::string check_program_headers(const LibraryFile& file, const Ehdr& h, std::vector<Phdr>& segments) {
  const uint64_t size = file.size();
  if (h.e_phentsize != sizeof(Phdr))
    return header_field("e_phentsize", offsetof(Ehdr, e_phentsize)) + " is " + std::to_string(h.e_phentsize) +
           ", not the " + std::to_string(sizeof(Phdr)) + " bytes of a program header";
  if (h.e_phnum == 0 || h.e_phnum == PN_XNUM)
    return header_field("e_phnum", offsetof(Ehdr, e_phnum)) + " is " + std::to_string(h.e_phnum) +
           ": no usable program headers";
  const uint64_t table_bytes = uint64_t{h.e_phnum} * sizeof(Phdr);  // at most 65534 x 56: cannot overflow
  uint64_t table_end = 0;
  const bool table_overflows = __builtin_add_overflow(uint64_t{h.e_phoff}, table_bytes, &table_end);
  if (table_overflows || table_end > size)
    return "program header table at " + header_field("e_phoff", offsetof(Ehdr, e_phoff)) + " = " +
           std::to_string(h.e_phoff) + ", " + std::to_string(h.e_phnum) + " entries, " +
           (table_overflows ? std::string("overflows") : past_end(table_end, size));
  segments.resize(h.e_phnum);
  if (!file.read(h.e_phoff, segments.data(), table_bytes)) return kShortRead;

  const Phdr* previous_load = nullptr;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Phdr& p = segments[i];
    const std::string where = program_header_at(h, i, p.p_type);
    uint64_t end = 0;
    if (__builtin_add_overflow(uint64_t{p.p_offset}, uint64_t{p.p_filesz}, &end))
      return where + "p_offset " + std::to_string(p.p_offset) + " + p_filesz " + std::to_string(p.p_filesz) +
             " overflows";
    if (p.p_filesz > 0 && end > size)
      return where + "p_offset " + std::to_string(p.p_offset) + " + p_filesz " + std::to_string(p.p_filesz) + " " +
             past_end(end, size);
    uint64_t memory_end = 0;
    if (__builtin_add_overflow(uint64_t{p.p_vaddr}, uint64_t{p.p_memsz}, &memory_end))
      return where + "p_vaddr " + std::to_string(p.p_vaddr) + " + p_memsz " + std::to_string(p.p_memsz) +
             " overflows";
    if (p.p_type != PT_LOAD) continue;
    if (p.p_filesz > p.p_memsz)
      return where + "p_filesz " + std::to_string(p.p_filesz) + " is larger than p_memsz " + std::to_string(p.p_memsz);
    if (previous_load != nullptr && p.p_vaddr < previous_load->p_vaddr + previous_load->p_memsz)
      return where + "p_vaddr " + std::to_string(p.p_vaddr) + " overlaps or precedes the PT_LOAD before it";
    previous_load = &p;
  }
  if (previous_load == nullptr) return "none of the " + std::to_string(h.e_phnum) + " program headers is PT_LOAD";
  size_t dynamics = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Phdr& p = segments[i];
    if (!read_from_loaded_memory(p.p_type)) continue;
    dynamics += p.p_type == PT_DYNAMIC;
    // A TLS segment's .tbss part takes no address space in the image: only its initial bytes must be loaded.
    const uint64_t bytes = p.p_type == PT_TLS ? p.p_filesz : p.p_memsz;
    const bool empty_dynamic = p.p_type == PT_DYNAMIC && p.p_memsz == 0;
    if (empty_dynamic || (bytes > 0 && loaded_at(segments, p.p_vaddr, bytes) < 0))
      return program_header_at(h, i, p.p_type) + "p_vaddr " + std::to_string(p.p_vaddr) + ", p_memsz " +
             std::to_string(p.p_memsz) + (empty_dynamic ? " is empty" : " lies outside every PT_LOAD segment");
  }
  if (dynamics != 1)
    return std::to_string(dynamics) + " of the " + std::to_string(h.e_phnum) +
           " program headers are PT_DYNAMIC; a shared library has exactly one";
  return {};
}

// Dynamic entries whose value is an address the loader dereferences, with the entry (if any) that gives the size of
// what lies there.
struct AddressTag {
  int64_t tag;
  const char* name;
  int64_t size_tag;
};
constexpr AddressTag kAddressTags[] = {
    {DT_PLTGOT, "DT_PLTGOT", DT_NULL},        {DT_HASH, "DT_HASH", DT_NULL},
    {DT_STRTAB, "DT_STRTAB", DT_STRSZ},       {DT_SYMTAB, "DT_SYMTAB", DT_NULL},
    {DT_RELA, "DT_RELA", DT_RELASZ},          {DT_REL, "DT_REL", DT_RELSZ},
    {DT_JMPREL, "DT_JMPREL", DT_PLTRELSZ},    {DT_INIT, "DT_INIT", DT_NULL},
    {DT_FINI, "DT_FINI", DT_NULL},            {DT_INIT_ARRAY, "DT_INIT_ARRAY", DT_INIT_ARRAYSZ},
    {DT_FINI_ARRAY, "DT_FINI_ARRAY", DT_FINI_ARRAYSZ}, {DT_PREINIT_ARRAY, "DT_PREINIT_ARRAY", DT_PREINIT_ARRAYSZ},
    {DT_GNU_HASH, "DT_GNU_HASH", DT_NULL},    {DT_VERSYM, "DT_VERSYM", DT_NULL},
    {DT_VERDEF, "DT_VERDEF", DT_NULL},        {DT_VERNEED, "DT_VERNEED", DT_NULL},
};
// Dynamic entries whose value is an offset into the string table.
constexpr AddressTag kStringTags[] = {{DT_NEEDED, "DT_NEEDED", DT_NULL},
                                      {DT_SONAME, "DT_SONAME", DT_NULL},
                                      {DT_RPATH, "DT_RPATH", DT_NULL},
                                      {DT_RUNPATH, "DT_RUNPATH", DT_NULL}};

// The dynamic section as the loader will see it in memory: its bytes come from the file where its PT_LOAD maps
// them, it ends with DT_NULL, and the addresses and string offsets in it point inside what gets loaded. A damaged
// entry here would otherwise be a wild read inside dlopen.
std::string check_dynamic_section(const LibraryFile& file, const Ehdr& h, const std::vector<Phdr>& segments) {
  using Dyn = ElfW(Dyn);
  size_t index = 0;
  while (segments[index].p_type != PT_DYNAMIC) ++index;  // check_program_headers found exactly one
  const Phdr& dynamic = segments[index];
  const Phdr& load = segments[static_cast<size_t>(loaded_at(segments, dynamic.p_vaddr, dynamic.p_memsz))];
  const uint64_t into_load = dynamic.p_vaddr - load.p_vaddr;
  if (dynamic.p_offset != load.p_offset + into_load || into_load + dynamic.p_memsz > load.p_filesz ||
      dynamic.p_filesz != dynamic.p_memsz)
    return program_header_at(h, index, PT_DYNAMIC) + "p_offset " + std::to_string(dynamic.p_offset) +
           " and p_filesz " + std::to_string(dynamic.p_filesz) +
           " disagree with the PT_LOAD that maps it (the loader would read other bytes)";

  std::map<int64_t, uint64_t> first;          // tag -> value of its first entry
  std::vector<std::pair<int64_t, uint64_t>> strings;  // (tag, byte of the entry) for string-offset entries
  bool terminated = false;
  constexpr size_t kChunk = 256;
  std::vector<Dyn> chunk;
  const uint64_t count = dynamic.p_filesz / sizeof(Dyn);
  for (uint64_t at = 0; at < count && !terminated; at += kChunk) {
    chunk.resize(static_cast<size_t>(std::min<uint64_t>(kChunk, count - at)));
    if (!file.read(dynamic.p_offset + at * sizeof(Dyn), chunk.data(), chunk.size() * sizeof(Dyn))) return kShortRead;
    for (size_t j = 0; j < chunk.size(); ++j) {
      const Dyn& d = chunk[j];
      if (d.d_tag == DT_NULL) {
        terminated = true;
        break;
      }
      first.emplace(d.d_tag, d.d_un.d_val);
      for (const auto& s : kStringTags)
        if (d.d_tag == s.tag) strings.emplace_back(d.d_tag, dynamic.p_offset + (at + j) * sizeof(Dyn));
    }
  }
  const std::string where = "dynamic section (PT_DYNAMIC at byte " + std::to_string(dynamic.p_offset) + "): ";
  if (!terminated) return where + "no DT_NULL entry ends it within its " + std::to_string(dynamic.p_filesz) + " bytes";
  for (const auto& a : kAddressTags) {
    auto it = first.find(a.tag);
    if (it == first.end()) continue;
    auto size = a.size_tag != DT_NULL ? first.find(a.size_tag) : first.end();
    const uint64_t bytes = size == first.end() ? 1 : std::max<uint64_t>(size->second, 1);
    if (loaded_at(segments, it->second, bytes) < 0)
      return where + a.name + " " + std::to_string(it->second) +
             (size == first.end() ? std::string() : " + " + std::to_string(size->second) + " bytes") +
             " points outside every PT_LOAD segment";
  }
  const uint64_t string_bytes = first.count(DT_STRSZ) ? first[DT_STRSZ] : 0;
  for (const auto& [tag, byte] : strings) {
    Dyn d{};
    if (!file.read(byte, &d, sizeof d)) return kShortRead;
    if (d.d_un.d_val >= string_bytes)
      return where + "the entry at byte " + std::to_string(byte) + " names string " + std::to_string(d.d_un.d_val) +
             ", past the " + std::to_string(string_bytes) + "-byte string table (DT_STRSZ)";
  }
  return {};
}

// The section header table and each section's file bytes. dlopen does not read them, but a table past the end is
// the surest sign of a file cut short, and debuggers and tools that read the library would trip on it.
std::string check_section_headers(const LibraryFile& file, const Ehdr& h) {
  if (h.e_shoff == 0) return {};  // no section headers: allowed
  const uint64_t size = file.size();
  if (h.e_shentsize != sizeof(Shdr))
    return header_field("e_shentsize", offsetof(Ehdr, e_shentsize)) + " is " + std::to_string(h.e_shentsize) +
           ", not the " + std::to_string(sizeof(Shdr)) + " bytes of a section header";
  const std::string table = "section header table at " + header_field("e_shoff", offsetof(Ehdr, e_shoff)) + " = " +
                            std::to_string(h.e_shoff);
  uint64_t first_end = 0;
  const bool first_overflows = __builtin_add_overflow(uint64_t{h.e_shoff}, uint64_t{sizeof(Shdr)}, &first_end);
  if (first_overflows || first_end > size)
    return table + " " + (first_overflows ? std::string("overflows") : past_end(first_end, size));
  uint64_t count = h.e_shnum;
  if (count == 0) {  // more than SHN_LORESERVE sections: the count is in section 0's sh_size
    Shdr zero{};
    if (!file.read(h.e_shoff, &zero, sizeof zero)) return kShortRead;
    count = zero.sh_size;
  }
  uint64_t table_bytes = 0, table_end = 0;
  if (__builtin_mul_overflow(count, uint64_t{sizeof(Shdr)}, &table_bytes) ||
      __builtin_add_overflow(uint64_t{h.e_shoff}, table_bytes, &table_end))
    return table + ", " + std::to_string(count) + " entries, overflows";
  if (table_end > size) return table + ", " + std::to_string(count) + " entries, " + past_end(table_end, size);
  if (h.e_shstrndx != SHN_UNDEF && h.e_shstrndx != SHN_XINDEX && h.e_shstrndx >= count)
    return header_field("e_shstrndx", offsetof(Ehdr, e_shstrndx)) + " is " + std::to_string(h.e_shstrndx) +
           ", past the " + std::to_string(count) + " sections";
  // In chunks: the table lies inside the file, but a hostile file can still make it large.
  constexpr uint64_t kChunk = 1024;
  std::vector<Shdr> chunk;
  for (uint64_t first = 0; first < count; first += kChunk) {
    chunk.resize(static_cast<size_t>(std::min(kChunk, count - first)));
    if (!file.read(h.e_shoff + first * sizeof(Shdr), chunk.data(), chunk.size() * sizeof(Shdr))) return kShortRead;
    for (size_t j = 0; j < chunk.size(); ++j) {
      const Shdr& s = chunk[j];
      if (s.sh_type == SHT_NOBITS || s.sh_size == 0) continue;
      uint64_t end = 0;
      const bool overflows = __builtin_add_overflow(uint64_t{s.sh_offset}, uint64_t{s.sh_size}, &end);
      if (overflows || end > size)
        return "section " + std::to_string(first + j) + " (header at byte " +
               std::to_string(h.e_shoff + (first + j) * sizeof(Shdr)) + "): sh_offset " +
               std::to_string(s.sh_offset) + " + sh_size " + std::to_string(s.sh_size) + " " +
               (overflows ? std::string("overflows") : past_end(end, size));
    }
  }
  return {};
}

}  // namespace

std::string library_file_problem(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "library file not found"
                                               : "cannot stat the library file: " + std::string(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return "library file is " + file_kind(st.st_mode) + ", not a regular file";
  return {};
}

std::string check_elf_compatible(const std::filesystem::path& file) {
  LibraryFile library(file);
  if (std::string why = library.open_problem(); !why.empty()) return why;
  if (std::string why = check_ident(library); !why.empty()) return why;
  Ehdr header{};
  if (!library.read(0, &header, sizeof header)) return kShortRead;
  std::vector<Phdr> segments;
  if (std::string why = check_program_headers(library, header, segments); !why.empty())
    return "corrupt ELF file: " + why;
  if (std::string why = check_dynamic_section(library, header, segments); !why.empty())
    return "corrupt ELF file: " + why;
  if (std::string why = check_section_headers(library, header); !why.empty()) return "corrupt ELF file: " + why;
  return {};
}

}  // namespace ramjet::core
