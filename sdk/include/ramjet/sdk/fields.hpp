// Declared configuration fields: a component lists the fields of its JSON configuration once — name, type,
// default, allowed values or range, whether required — and the SDK checks a configuration against that list,
// collecting every problem with its JSON pointer. `ramjet validate` reaches the same check through the
// component's check_config slot (abi.h), so an unknown key or a bad value is reported before anything runs,
// in the component's own words, and create() refuses the same configuration the same way.
//
//   static ramjet::Fields fields() {
//     return {ramjet::Field::string("method").one_of({"minmax", "percentile", "mse"}).fallback("minmax"),
//             ramjet::Field::number("percentile").above(50).at_most(100).fallback(99.99),
//             ramjet::Field::integer("classes").at_least(1).required()};
//   }
#ifndef RAMJET_SDK_FIELDS_HPP
#define RAMJET_SDK_FIELDS_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ramjet {

// One problem in a configuration: the JSON pointer relative to the configuration object, and what is wrong.
struct Problem {
  std::string pointer;
  std::string message;
};
using Problems = std::vector<Problem>;

// JSON-pointer escaping of one key ("a/b" -> "a~1b").
inline std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// A value shown inside a message: long values are cut, so a 50 MB string never comes back whole.
inline std::string quote_value(const nlohmann::json& value, size_t limit = 80) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

// The closest of `candidates` to `word` by edit distance, when close enough to be a likely typo.
inline std::optional<std::string> closest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diagonal = up;
      }
    }
    if (row[c.size()] < best_distance) best_distance = row[c.size()], best = c;
  }
  return best;
}

class Fields;

class Field {
 public:
  enum class Type { kString, kInteger, kNumber, kBoolean, kObject, kArray, kAny };

  static Field string(std::string name) { return Field(std::move(name), Type::kString); }
  static Field integer(std::string name) { return Field(std::move(name), Type::kInteger); }
  static Field number(std::string name) { return Field(std::move(name), Type::kNumber); }
  static Field boolean(std::string name) { return Field(std::move(name), Type::kBoolean); }
  static Field array(std::string name) { return Field(std::move(name), Type::kArray); }
  static Field any(std::string name) { return Field(std::move(name), Type::kAny); }
  // A nested object whose own fields are declared too (pointers continue into it).
  static Field object(std::string name, Fields fields);

  Field& required() { required_ = true; return *this; }
  // Allowed strings (for a string field, or the string alternative of an `any` field).
  Field& one_of(std::vector<std::string> values) { choices_ = std::move(values); return *this; }
  Field& at_least(double v) { min_ = v; return *this; }
  Field& above(double v) { min_ = v, min_exclusive_ = true; return *this; }
  Field& at_most(double v) { max_ = v; return *this; }
  Field& below(double v) { max_ = v, max_exclusive_ = true; return *this; }
  // The value used when the field is absent (documentation and Fields::with_defaults).
  Field& fallback(nlohmann::json value) { fallback_ = std::move(value); return *this; }
  // Any further rule: return a message when `value` is wrong, nothing when it is fine.
  Field& rule(std::function<std::optional<std::string>(const nlohmann::json& value)> rule) {
    rules_.push_back(std::move(rule));
    return *this;
  }
  Field& doc(std::string text) { doc_ = std::move(text); return *this; }

  const std::string& name() const { return name_; }
  bool is_required() const { return required_; }
  const std::optional<nlohmann::json>& fallback_value() const { return fallback_; }
  const std::string& documentation() const { return doc_; }

  void check(const nlohmann::json& value, const std::string& pointer, Problems& out) const;

 private:
  Field(std::string name, Type type) : name_(std::move(name)), type_(type) {}
  static const char* type_words(Type type) {
    switch (type) {
      case Type::kString: return "a string";
      case Type::kInteger: return "an integer";
      case Type::kNumber: return "a number";
      case Type::kBoolean: return "true or false";
      case Type::kObject: return "an object";
      case Type::kArray: return "an array";
      case Type::kAny: return "a value";
    }
    return "a value";
  }
  std::string choice_list() const {
    std::string list;
    for (const auto& c : choices_) list += (list.empty() ? "" : ", ") + c;
    return list;
  }

  std::string name_;
  Type type_;
  bool required_ = false;
  std::vector<std::string> choices_;
  std::optional<double> min_, max_;
  bool min_exclusive_ = false, max_exclusive_ = false;
  std::optional<nlohmann::json> fallback_;
  std::vector<std::function<std::optional<std::string>(const nlohmann::json&)>> rules_;
  std::string doc_;
  std::shared_ptr<const Fields> nested_;
};

// The whole declared configuration of one component.
class Fields {
 public:
  Fields() = default;
  Fields(std::initializer_list<Field> fields) : fields_(fields) {}

  // Keys not declared are accepted (a configuration that passes extra keys on to someone else).
  Fields& allow_unknown() { open_ = true; return *this; }
  Fields& add(Field field) { fields_.push_back(std::move(field)); return *this; }
  const std::vector<Field>& list() const { return fields_; }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& f : fields_) out.push_back(f.name());
    return out;
  }
  const Field* find(const std::string& name) const {
    for (const auto& f : fields_)
      if (f.name() == name) return &f;
    return nullptr;
  }

  // Every problem of `config` (an object), with pointers under `pointer` ("" for the configuration itself).
  void check(const nlohmann::json& config, const std::string& pointer, Problems& out) const {
    if (!config.is_object()) {
      out.push_back({pointer, std::string("must be an object, got ") + config.type_name()});
      return;
    }
    for (const auto& [key, value] : config.items()) {
      const std::string p = pointer + "/" + pointer_token(key);
      if (const Field* f = find(key)) {
        f->check(value, p, out);
      } else if (!open_) {
        std::string list;
        for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
        std::string message = "unknown field '" + key + "'";
        if (auto guess = closest_word(key, names())) message += " (did you mean '" + *guess + "'?)";
        out.push_back({p, message + "; the fields are: " + (list.empty() ? "none" : list)});
      }
    }
    for (const auto& f : fields_)
      if (f.is_required() && !config.contains(f.name()))
        out.push_back({pointer + "/" + pointer_token(f.name()), "required field is missing"});
  }

  Problems check(const nlohmann::json& config) const {
    Problems out;
    check(config, "", out);
    return out;
  }

  // `config` with every absent field that declares a fallback filled in.
  nlohmann::json with_defaults(nlohmann::json config) const {
    if (!config.is_object()) return config;
    for (const auto& f : fields_)
      if (!config.contains(f.name()) && f.fallback_value()) config[f.name()] = *f.fallback_value();
    return config;
  }

 private:
  std::vector<Field> fields_;
  bool open_ = false;
};

inline Field Field::object(std::string name, Fields fields) {
  Field f(std::move(name), Type::kObject);
  f.nested_ = std::make_shared<const Fields>(std::move(fields));
  return f;
}

inline void Field::check(const nlohmann::json& value, const std::string& pointer, Problems& out) const {
  auto wrong = [&](const std::string& message) { out.push_back({pointer, message}); };
  const bool numeric = type_ == Type::kInteger || type_ == Type::kNumber;
  switch (type_) {
    case Type::kString:
      if (!value.is_string()) return wrong(std::string("must be a string, got ") + quote_value(value));
      break;
    case Type::kInteger:
      if (!value.is_number_integer() &&
          !(value.is_number_float() && std::isfinite(value.get<double>()) &&
            value.get<double>() == std::floor(value.get<double>())))
        return wrong("must be an integer, got " + quote_value(value));
      // Readers take integers as int64_t: a value outside its range (1e300, 2^64 - 1) would convert wrongly.
      if ((value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
          (value.is_number_float() && std::fabs(value.get<double>()) >= 9.2e18))
        return wrong("must be an integer between -2^63 and 2^63 - 1, got " + quote_value(value));
      break;
    case Type::kNumber:
      if (!value.is_number() || !std::isfinite(value.get<double>()))
        return wrong("must be a finite number, got " + quote_value(value));
      break;
    case Type::kBoolean:
      if (!value.is_boolean()) return wrong("must be true or false, got " + quote_value(value));
      break;
    case Type::kObject:
      if (!value.is_object()) return wrong(std::string("must be an object, got ") + quote_value(value));
      if (nested_) nested_->check(value, pointer, out);
      break;
    case Type::kArray:
      if (!value.is_array()) return wrong(std::string("must be an array, got ") + quote_value(value));
      break;
    case Type::kAny:
      break;
  }
  if (!choices_.empty() && value.is_string() &&
      std::find(choices_.begin(), choices_.end(), value.get<std::string>()) == choices_.end()) {
    std::string message = "must be one of " + choice_list() + ", got " + quote_value(value);
    if (auto guess = closest_word(value.get<std::string>(), choices_)) message += " (did you mean '" + *guess + "'?)";
    return wrong(message);
  }
  if (numeric && value.is_number()) {
    const double v = value.get<double>();
    auto number = [](double x) {
      nlohmann::json j = x;
      if (x == std::floor(x) && std::fabs(x) < 1e15) j = static_cast<int64_t>(x);
      return j.dump();
    };
    if (min_ && (min_exclusive_ ? !(v > *min_) : !(v >= *min_)))
      return wrong(std::string("must be ") + (min_exclusive_ ? "> " : ">= ") + number(*min_) + ", got " +
                   quote_value(value));
    if (max_ && (max_exclusive_ ? !(v < *max_) : !(v <= *max_)))
      return wrong(std::string("must be ") + (max_exclusive_ ? "< " : "<= ") + number(*max_) + ", got " +
                   quote_value(value));
  }
  for (const auto& rule : rules_)
    if (auto message = rule(value)) return wrong(*message);
  (void)type_words;
}

inline nlohmann::json problems_to_json(const Problems& problems) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : problems) out.push_back({{"pointer", p.pointer}, {"message", p.message}});
  return out;
}

}  // namespace ramjet

#endif  // RAMJET_SDK_FIELDS_HPP
