#include "ramjet/data/element_cache.hpp"

#include "ramjet/data/example_io.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace ramjet::core {
namespace {

// File layout: header {magic "RJCACHE1", u64 fingerprint, u64 count, u64 index_offset}, then records (see
// example_io.cpp), then `count` u64 record offsets. Written to a temporary file and renamed when complete.
constexpr char kMagic[8] = {'R', 'J', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr size_t kHeaderSize = 32;

class MemoryCache final : public ElementCache {
 public:
  std::optional<Example> get(int64_t id) const override {
    std::lock_guard lock(mutex_);
    if (id < 0 || id >= static_cast<int64_t>(items_.size()) || !items_[static_cast<size_t>(id)]) return std::nullopt;
    return copy_example(*items_[static_cast<size_t>(id)]);
  }
  void put(int64_t id, const Example& example) override {
    if (complete()) return;
    auto copy = std::make_unique<Example>(copy_example(example));
    std::lock_guard lock(mutex_);
    if (id >= static_cast<int64_t>(items_.size())) items_.resize(static_cast<size_t>(id) + 1);
    auto& slot = items_[static_cast<size_t>(id)];
    if (!slot) {
      bytes_ += example_bytes(*copy);
      slot = std::move(copy);
    }
  }
  void finish_epoch(int64_t count) override {
    std::lock_guard lock(mutex_);
    if (complete() || count > static_cast<int64_t>(items_.size())) return;
    for (int64_t i = 0; i < count; ++i)
      if (!items_[static_cast<size_t>(i)]) return;
    count_ = count;
    complete_.store(true, std::memory_order_release);
  }
  nlohmann::json report() const override {
    std::lock_guard lock(mutex_);
    return {{"kind", "memory"}, {"complete", complete()}, {"elements", items_.size()}, {"bytes", bytes_}};
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Example>> items_;
  size_t bytes_ = 0;
};

class FileCache final : public ElementCache {
 public:
  FileCache(std::filesystem::path path, uint64_t fingerprint) : path_(std::move(path)), fingerprint_(fingerprint) {
    if (open_existing()) return;
    temp_path_ = path_.string() + ".partial." + std::to_string(::getpid());
    std::error_code ec;
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
    fd_ = ::open(temp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InvalidInput(path_.string() + ": cannot create the cache file: " + std::strerror(errno));
    write_all(std::string(kHeaderSize, '\0'));  // filled in when complete
    size_ = kHeaderSize;
  }
  ~FileCache() override {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_size_);
    if (fd_ >= 0) ::close(fd_);
    if (!temp_path_.empty() && !complete()) ::unlink(temp_path_.c_str());
  }

  std::optional<Example> get(int64_t id) const override {
    if (!complete()) return std::nullopt;
    if (id < 0 || id >= count_) return std::nullopt;
    size_t offset = offsets_[static_cast<size_t>(id)];
    return read_example(std::string_view(map_, map_size_), offset, path_.string());
  }

  void put(int64_t id, const Example& example) override {
    if (complete() || id < 0) return;
    std::string record;
    append_example(record, example);
    std::lock_guard lock(mutex_);
    if (id >= static_cast<int64_t>(offsets_.size())) offsets_.resize(static_cast<size_t>(id) + 1, 0);
    if (offsets_[static_cast<size_t>(id)] != 0) return;
    offsets_[static_cast<size_t>(id)] = size_;
    write_all(record);
    size_ += record.size();
  }

  void finish_epoch(int64_t count) override {
    std::lock_guard lock(mutex_);
    if (complete() || count > static_cast<int64_t>(offsets_.size())) return;
    for (int64_t i = 0; i < count; ++i)
      if (offsets_[static_cast<size_t>(i)] == 0) return;
    offsets_.resize(static_cast<size_t>(count));
    std::string index(reinterpret_cast<const char*>(offsets_.data()), offsets_.size() * sizeof(uint64_t));
    const uint64_t index_offset = size_;
    write_all(index);
    std::string header(kMagic, sizeof kMagic);
    for (uint64_t v : {fingerprint_, static_cast<uint64_t>(count), index_offset})
      header.append(reinterpret_cast<const char*>(&v), sizeof v);
    if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) || ::fsync(fd_) != 0 ||
        ::rename(temp_path_.c_str(), path_.c_str()) != 0)
      throw RuntimeFailure(path_.string() + ": cannot finish the cache file: " + std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    temp_path_.clear();
    if (!open_existing()) throw RuntimeFailure(path_.string() + ": the cache just written cannot be read back");
    log(RAMJET_LOG_INFO, "cache", "wrote " + path_.string() + " (" + std::to_string(count) + " elements)");
  }

  nlohmann::json report() const override {
    return {{"kind", "file"}, {"path", path_.string()}, {"complete", complete()}, {"reused", reused_},
            {"elements", complete() ? count_ : static_cast<int64_t>(offsets_.size())},
            {"bytes", complete() ? map_size_ : size_}};
  }

 private:
  void write_all(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw RuntimeFailure(path_.string() + ": cannot write the cache: " + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
  }

  // Maps a complete cache file with our fingerprint. False (and a log line) when absent or stale.
  bool open_existing() {
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < kHeaderSize) {
      ::close(fd);
      log(RAMJET_LOG_WARNING, "cache", path_.string() + " is not a complete cache file; rebuilding it");
      return false;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return false;
    const char* bytes = static_cast<const char*>(map);
    uint64_t fingerprint, count, index_offset;
    std::memcpy(&fingerprint, bytes + 8, 8);
    std::memcpy(&count, bytes + 16, 8);
    std::memcpy(&index_offset, bytes + 24, 8);
    const bool valid = std::memcmp(bytes, kMagic, sizeof kMagic) == 0 && index_offset >= kHeaderSize &&
                       index_offset <= size && count <= (size - index_offset) / sizeof(uint64_t);
    if (!valid || fingerprint != fingerprint_) {
      ::munmap(map, size);
      log(RAMJET_LOG_INFO, "cache",
          path_.string() + (valid ? ": upstream changed since it was written; rebuilding it" : ": not a valid cache file; rebuilding it"));
      return false;
    }
    offsets_.assign(reinterpret_cast<const uint64_t*>(bytes + index_offset),
                    reinterpret_cast<const uint64_t*>(bytes + index_offset) + count);
    for (uint64_t o : offsets_)
      if (o < kHeaderSize || o >= index_offset) {
        ::munmap(map, size);
        log(RAMJET_LOG_WARNING, "cache", path_.string() + ": corrupt index; rebuilding it");
        offsets_.clear();
        return false;
      }
    map_ = bytes;
    map_size_ = size;
    count_ = static_cast<int64_t>(count);
    reused_ = temp_path_.empty() && fd_ < 0 && size_ == 0;
    complete_.store(true, std::memory_order_release);
    return true;
  }

  std::filesystem::path path_;
  uint64_t fingerprint_;
  std::string temp_path_;
  int fd_ = -1;
  size_t size_ = 0;
  mutable std::mutex mutex_;
  std::vector<uint64_t> offsets_;
  const char* map_ = nullptr;
  size_t map_size_ = 0;
  bool reused_ = false;
};

}  // namespace

std::unique_ptr<ElementCache> make_memory_cache() { return std::make_unique<MemoryCache>(); }

std::unique_ptr<ElementCache> make_file_cache(const std::filesystem::path& path, uint64_t fingerprint) {
  return std::make_unique<FileCache>(path, fingerprint);
}

}  // namespace ramjet::core
