#include "csv_source.hpp"

#include "file_bytes.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace stock_sources {
namespace {

// One column reference as written in the manifest: a name or an index.
std::optional<std::string> column_problem(const nlohmann::json& c) {
  if (c.is_string() && !c.get<std::string>().empty()) return std::nullopt;
  if (c.is_number_integer() && c.get<int64_t>() >= 0) return std::nullopt;
  return "a column is a header name or a 0-based index, got " + ramjet::quote_value(c);
}

// Splits the text into rows of cells, RFC 4180 style. Errors name the file, line and column (1-based).
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string name) : s_(text), name_(std::move(name)) {}
  // The next row's cells, or false at the end. A final line break is optional; blank lines are refused
  // (a blank line in the middle of numeric data is a sign of a damaged file).
  bool next(std::vector<std::string>& cells) {
    cells.clear();
    if (i_ >= s_.size()) return false;
    ++line_;
    std::string cell;
    for (;;) {
      cell.clear();
      if (i_ < s_.size() && s_[i_] == '"') {
        const size_t line_at_quote = line_;
        ++i_;
        for (;;) {
          if (i_ >= s_.size())
            fail(line_at_quote, cells.size() + 1, "a quoted cell is not closed before the end of the file");
          if (s_[i_] == '"') {
            if (i_ + 1 < s_.size() && s_[i_ + 1] == '"') cell += '"', i_ += 2;
            else { ++i_; break; }
          } else {
            if (s_[i_] == '\n') ++line_;
            cell += s_[i_++];
          }
        }
        if (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '\n' && s_[i_] != '\r')
          fail(line_, cells.size() + 1, "text after a quoted cell's closing quote");
      } else {
        while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '\n' && s_[i_] != '\r') {
          if (s_[i_] == '"') fail(line_, cells.size() + 1, "a quote inside an unquoted cell");
          cell += s_[i_++];
        }
      }
      cells.push_back(cell);
      if (i_ >= s_.size()) return true;
      if (s_[i_] == ',') { ++i_; continue; }
      if (s_[i_] == '\r') {
        if (i_ + 1 >= s_.size() || s_[i_ + 1] != '\n') fail(line_, cells.size(), "a carriage return without a line feed");
        ++i_;
      }
      ++i_;  // '\n'
      if (cells.size() == 1 && cells[0].empty()) fail(line_, 1, "a blank line");
      return true;
    }
  }
  size_t line() const { return line_; }
  [[noreturn]] void fail(size_t line, size_t column, const std::string& why) const {
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                        name_ + ": line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + why);
  }

 private:
  std::string_view s_;
  std::string name_;
  size_t i_ = 0, line_ = 0;
};

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

ramjet::Fields CsvSource::fields() {
  using ramjet::Field;
  return {Field::string("file").required().doc("CSV file, raw or gzipped; relative to the manifest"),
          Field::boolean("header").fallback(true).doc("the first line names the columns"),
          Field::object("columns", ramjet::Fields().allow_unknown())
              .required()
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must name at least one tensor";
                return std::nullopt;
              })
              .doc("{\"<tensor name>\": [column, ...] or column}; a column is a header name or 0-based index"),
          Field::object("dtypes", ramjet::Fields().allow_unknown())
              .doc("{\"<tensor name>\": \"float32\" | \"int32\"}; default float32 for a list, int32 for one column")};
}

void CsvSource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  const bool header = config.value("header", true);
  for (const auto& [key, spec] : config.at("columns").items()) {
    const std::string pointer = "/columns/" + ramjet::pointer_token(key);
    const auto check_one = [&](const nlohmann::json& c, const std::string& at) {
      if (auto why = column_problem(c)) return problems.push_back({at, *why});
      if (c.is_string() && !header)
        problems.push_back({at, "names column " + c.dump() + " but header is false: use its 0-based index"});
    };
    if (spec.is_array()) {
      if (spec.empty()) problems.push_back({pointer, "must list at least one column"});
      for (size_t i = 0; i < spec.size(); ++i) check_one(spec[i], pointer + "/" + std::to_string(i));
    } else {
      check_one(spec, pointer);
    }
  }
  if (!config.contains("dtypes")) return;
  for (const auto& [key, dtype] : config.at("dtypes").items()) {
    const std::string pointer = "/dtypes/" + ramjet::pointer_token(key);
    if (!config.at("columns").contains(key))
      problems.push_back({pointer, "names no tensor of columns"});
    else if (dtype != "float32" && dtype != "int32")
      problems.push_back({pointer, "must be \"float32\" or \"int32\", got " + ramjet::quote_value(dtype)});
  }
}

// create() has checked the configuration against fields() and check(); here the file is read.
CsvSource::CsvSource(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  const std::filesystem::path path = config.path("file");
  const std::string name = path.string();
  ByteReader reader(path);
  if (!reader.gzipped() && reader.file_size() > declared_size_limit())
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": " + std::to_string(reader.file_size()) +
                                                     " bytes, more than this machine's memory");
  std::string text;
  for (std::vector<char> chunk(1 << 20);;) {
    const size_t n = reader.read(reinterpret_cast<uint8_t*>(chunk.data()), chunk.size());
    if (n == 0) break;
    text.append(chunk.data(), n);
    if (text.size() > declared_size_limit())
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": inflates to more than this machine's memory");
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // the UTF-8 byte order mark spreadsheets write
  CsvReader csv(text, name);
  std::vector<std::string> cells;
  if (!csv.next(cells)) throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": the file is empty");
  const size_t width = cells.size();
  std::vector<std::string> names;
  const bool header = c.at("header");
  if (header) names = cells;

  // Resolve each tensor's columns against the header or the width of the first row.
  for (const auto& [key, spec] : c.at("columns").items()) {
    Output out;
    out.key = key;
    out.scalar = !spec.is_array();
    const nlohmann::json list = out.scalar ? nlohmann::json::array({spec}) : spec;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = config.where("columns/" + ramjet::pointer_token(key) + (out.scalar ? "" : "/" + std::to_string(i)));
      if (list[i].is_string()) {
        const auto found = std::find(names.begin(), names.end(), list[i].get<std::string>());
        if (found == names.end())
          throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": " + name + " has no column named " + list[i].dump() +
                                                               " in its header (line 1)");
        out.columns.push_back(static_cast<size_t>(found - names.begin()));
      } else {
        const auto index = list[i].get<uint64_t>();
        if (index >= width)
          throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": column " + std::to_string(index) + " is outside " +
                                                               name + "'s " + std::to_string(width) + " columns (0-based)");
        out.columns.push_back(static_cast<size_t>(index));
      }
    }
    const std::string dtype = c.contains("dtypes") && c.at("dtypes").contains(key) ? c.at("dtypes").at(key).get<std::string>()
                                                                                  : (out.scalar ? "int32" : "float32");
    out.integer = dtype == "int32";
    outputs_.push_back(std::move(out));
  }

  bool have_row = !header;  // without a header the first line is data
  while (have_row || csv.next(cells)) {
    have_row = false;
    const size_t line = csv.line();
    if (cells.size() != width)
      csv.fail(line, std::min(cells.size(), width) + 1,
               "the row has " + std::to_string(cells.size()) + " cells; line 1 has " + std::to_string(width));
    for (Output& out : outputs_)
      for (size_t col : out.columns) {
        const std::string_view cell = trim(cells[col]);
        const auto column = [&] { return header ? " (" + names[col] + ")" : std::string(); };
        if (cell.empty()) csv.fail(line, col + 1, "empty cell" + column());
        if (out.integer) {
          int64_t v = 0;
          const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
          if (ec != std::errc() || end != cell.data() + cell.size() || v < std::numeric_limits<int32_t>::min() ||
              v > std::numeric_limits<int32_t>::max())
            csv.fail(line, col + 1, "\"" + std::string(cell) + "\"" + column() + " is not an int32 integer (tensor '" +
                                        out.key + "' is int32)");
          out.integers.push_back(static_cast<int32_t>(v));
        } else {
          float v = 0;
          const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
          if (ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(v))
            csv.fail(line, col + 1, "\"" + std::string(cell) + "\"" + column() + " is not a finite number");
          out.floats.push_back(v);
        }
      }
    ++rows_;
  }
}

nlohmann::json CsvSource::element_spec() const {
  nlohmann::json spec = nlohmann::json::object();
  for (const Output& out : outputs_)
    spec[out.key] = {{"dtype", out.integer ? "int32" : "float32"},
                     {"shape", out.scalar ? nlohmann::json::array() : nlohmann::json::array({out.columns.size()})}};
  return spec;
}

void CsvSource::get(int64_t index, ramjet::Example& out) const {
  if (index < 0 || index >= rows_)
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE,
                        "csv: element " + std::to_string(index) + " is outside [0, " + std::to_string(rows_) + ")");
  for (const Output& o : outputs_) {
    const auto k = static_cast<int64_t>(o.columns.size());
    std::vector<int64_t> shape;
    if (!o.scalar) shape.push_back(k);
    ramjet::Tensor t = ramjet::Tensor::zeros(o.integer ? ramjet::dtype_of<int32_t>() : ramjet::dtype_of<float>(), shape);
    if (o.integer) std::copy_n(o.integers.begin() + index * k, k, t.data<int32_t>());
    else std::copy_n(o.floats.begin() + index * k, k, t.data<float>());
    out.set(o.key, std::move(t));
  }
}

}  // namespace stock_sources
