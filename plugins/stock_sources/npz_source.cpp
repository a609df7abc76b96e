#include "npz_source.hpp"

#include <zip.h>

#include <filesystem>
#include <memory>

namespace stock_sources {
namespace {

// libzip's error codes in the words of this plugin (its own text is kept only for codes not foreseen here).
std::string zip_problem(int code, const std::string& fallback) {
  switch (code) {
    case ZIP_ER_NOZIP: return "not a zip archive (no end-of-central-directory record; an .npz is a zip file)";
    case ZIP_ER_INCONS: return "inconsistent zip archive (truncated, or its directory and entries disagree)";
    case ZIP_ER_CRC: return "the member's CRC-32 does not match its data (corrupt archive)";
    case ZIP_ER_ZLIB:
    case ZIP_ER_COMPRESSED_DATA: return "corrupt deflate data";
    case ZIP_ER_EOF: return "the archive ends early (truncated)";
    case ZIP_ER_COMPNOTSUPP: return "the member's compression method is not stored or deflate";
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD: return "the member is encrypted";
    case ZIP_ER_MULTIDISK: return "multi-disk archives are not supported";
    default: return fallback;
  }
}

ramjet_status zip_status(int code) {
  switch (code) {
    case ZIP_ER_OPEN:
    case ZIP_ER_NOENT:
    case ZIP_ER_READ:
    case ZIP_ER_SEEK: return RAMJET_ERR_IO;
    case ZIP_ER_MEMORY: return RAMJET_ERR_OUT_OF_MEMORY;
    default: return RAMJET_ERR_CORRUPT_DATA;
  }
}

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct MemberCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

// Reads exactly `count` bytes of a member or throws naming where the member's data failed.
void read_member(zip_file_t* f, uint8_t* out, size_t count, size_t at, const std::string& name) {
  size_t done = 0;
  while (done < count) {
    const zip_int64_t n = zip_fread(f, out + done, count - done);
    if (n < 0) {
      zip_error_t* e = zip_file_get_error(f);
      throw ramjet::Error(zip_status(zip_error_code_zip(e)), name + ": byte " + std::to_string(at + done) + ": " +
                                                                 zip_problem(zip_error_code_zip(e), zip_error_strerror(e)));
    }
    if (n == 0)
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": byte " + std::to_string(at + done) +
                                                       ": the member ends before its declared size");
    done += static_cast<size_t>(n);
  }
}

NpyArray read_npy_member(zip_t* archive, const std::string& file, const std::string& array, const std::string& where) {
  std::string member = array + ".npy";
  zip_int64_t index = zip_name_locate(archive, member.c_str(), 0);
  if (index < 0 && array.size() > 4 && array.ends_with(".npy")) index = zip_name_locate(archive, (member = array).c_str(), 0);
  if (index < 0) {
    std::string names;
    const zip_int64_t entries = zip_get_num_entries(archive, 0);
    for (zip_int64_t i = 0; i < entries && i < 20; ++i)
      if (const char* n = zip_get_name(archive, static_cast<zip_uint64_t>(i), 0)) names += (names.empty() ? "" : ", ") + std::string(n);
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": " + file + " has no array '" + array + "' (member " +
                                                         member + "); its members: " + (names.empty() ? "none" : names));
  }
  const std::string name = file + ":" + member;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(archive, static_cast<zip_uint64_t>(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": cannot read the member's directory entry");
  if ((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": compression method " + std::to_string(st.comp_method) +
                                                     " is not stored (numpy.savez) or deflate (numpy.savez_compressed)");
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": the member is encrypted");
  const uint64_t size = st.size;
  if (size > declared_size_limit())
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": the member declares " + std::to_string(size) +
                                                     " bytes, more than this machine's memory");
  std::unique_ptr<zip_file_t, MemberCloser> f(zip_fopen_index(archive, static_cast<zip_uint64_t>(index), 0));
  if (!f) {
    zip_error_t* e = zip_get_error(archive);
    throw ramjet::Error(zip_status(zip_error_code_zip(e)),
                        name + ": cannot open the member: " + zip_problem(zip_error_code_zip(e), zip_error_strerror(e)));
  }
  // The header first, so a member whose header disagrees with its size is refused before its data is inflated.
  Bytes bytes;
  const size_t total = static_cast<size_t>(size);
  reserve_bytes(bytes, std::min<size_t>(total, 12), name);
  read_member(f.get(), bytes.begin(), std::min<size_t>(total, 12), 0, name);
  bytes.size = std::min<size_t>(total, 12);
  const size_t header_end = std::min(npy_header_end(bytes.begin(), bytes.size), total);
  if (header_end > bytes.size) {
    reserve_bytes(bytes, header_end, name);
    read_member(f.get(), bytes.begin() + bytes.size, header_end - bytes.size, bytes.size, name);
    bytes.size = header_end;
  }
  const NpyHeader header = parse_npy_header(bytes.begin(), bytes.size, name);
  if (header.data_bytes != total - header.data_offset)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                        name + ": byte " + std::to_string(header.data_offset) + ": the header declares " +
                            std::to_string(header.data_bytes) + " bytes of values (shape " +
                            nlohmann::json(header.shape).dump() + ") but the member holds " +
                            std::to_string(total - header.data_offset));
  reserve_bytes(bytes, total, name);
  read_member(f.get(), bytes.begin() + bytes.size, total - bytes.size, bytes.size, name);
  bytes.size = total;
  // Reading one byte more lets libzip reach the member's end, where it compares the CRC-32.
  uint8_t extra;
  if (zip_fread(f.get(), &extra, 1) != 0) {
    zip_error_t* e = zip_file_get_error(f.get());
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": byte " + std::to_string(total) + ": " +
                                                     zip_problem(zip_error_code_zip(e), "data after the declared size"));
  }
  return npy_from_bytes(std::move(bytes), name);
}

}  // namespace

ramjet::Fields NpzSource::fields() {
  using ramjet::Field;
  return {Field::string("file").required().doc(".npz archive; relative to the manifest"),
          Field::object("arrays", ramjet::Fields().allow_unknown())
              .required()
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must name at least one tensor";
                return std::nullopt;
              })
              .doc("{\"<tensor name>\": \"<array name in the archive>\"}")};
}

void NpzSource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  for (const auto& [key, array] : config.at("arrays").items())
    if (!array.is_string() || array.get<std::string>().empty())
      problems.push_back({"/arrays/" + ramjet::pointer_token(key), "must be an array's name in the archive, got " +
                                                                       ramjet::quote_value(array)});
}

// create() has checked the configuration against fields() and check(); here the archive is read.
NpzSource::NpzSource(const ramjet::Config& config) {
  const std::string file = config.path("file").string();
  // A FIFO or device could block libzip's reads forever; a directory is a plain mistake.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw ramjet::Error(RAMJET_ERR_IO, config.where("file") + ": " + file +
                                           (std::filesystem::exists(file, ec) ? ": not a regular file" : ": no such file"));
  int code = 0;
  std::unique_ptr<zip_t, ArchiveCloser> archive(zip_open(file.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!archive) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    const std::string why = zip_problem(code, zip_error_strerror(&e));
    zip_error_fini(&e);
    throw ramjet::Error(zip_status(code), config.where("file") + ": " + file + ": " + why);
  }
  for (const auto& [key, array] : config.json().at("arrays").items()) {
    const std::string where = config.where("arrays/" + ramjet::pointer_token(key));
    table_.add(key, read_npy_member(archive.get(), file, array.get<std::string>(), where), where);
  }
}

}  // namespace stock_sources
