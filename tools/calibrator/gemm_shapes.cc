#include "tools/calibrator/gemm_shapes.h"

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace clustersim::calibrate {

namespace {

struct TypeName {
  DataType type;
  std::string_view name;
};
// Same names as core/data_type.cc's table (checked by gemm_shapes_test).
constexpr std::array kTypeNames{TypeName{DataType::kBf16, "bf16"}, TypeName{DataType::kFp16, "fp16"},
                                TypeName{DataType::kFp8, "fp8"}, TypeName{DataType::kTf32, "tf32"},
                                TypeName{DataType::kFp32, "fp32"}};

std::string valid_type_names() {
  std::string names;
  for (const auto& entry : kTypeNames) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '/' || c == '+' || c == '-';
}

bool is_valid_label(std::string_view label) {
  for (char c : label) {
    if (!is_label_char(c)) return false;
  }
  return true;
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Parses a dimension field; throws InputError naming the field.
int64_t parse_dimension(std::string_view text, std::string_view field, std::string_view where) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value <= 0 || value > kMaxGemmDimension) {
    std::ostringstream message;
    message << where << ": " << field << " '" << text << "' is not an integer in [1, "
            << kMaxGemmDimension << "]; expected a line `M N K dtype [label]`";
    throw InputError(message.str());
  }
  return value;
}

void add_for_types(std::vector<GemmShape>& shapes, const std::vector<DataType>& types, int64_t m,
                   int64_t n, int64_t k, const std::string& set, const std::string& label) {
  for (DataType type : types) shapes.push_back(GemmShape{m, n, k, type, set, label});
}

}  // namespace

double GemmShape::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

std::vector<DataType> gemm_data_types() {
  std::vector<DataType> types;
  for (const auto& entry : kTypeNames) types.push_back(entry.type);
  return types;
}

std::string_view gemm_data_type_name(DataType type) {
  for (const auto& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  throw InternalError("gemm_data_type_name: data type outside the calibrator's table");
}

DataType parse_gemm_data_type(std::string_view text, std::string_view where) {
  for (const auto& entry : kTypeNames) {
    if (entry.name == text) return entry.type;
  }
  throw InputError(std::string(where) + ": unknown data type '" + std::string(text) +
                   "'; valid: " + valid_type_names());
}

std::vector<GemmShape> square_shapes(const std::vector<DataType>& types, int64_t min_size,
                                     int64_t max_size) {
  if (!is_power_of_two(min_size) || !is_power_of_two(max_size) || min_size < 16 ||
      max_size > kMaxGemmDimension || min_size > max_size) {
    throw InputError("square GEMM sizes " + std::to_string(min_size) + ".." +
                     std::to_string(max_size) + " must be powers of two with 16 <= min <= max <= " +
                     std::to_string(kMaxGemmDimension));
  }
  std::vector<GemmShape> shapes;
  for (DataType type : types) {
    for (int64_t size = min_size; size <= max_size; size *= 2) {
      shapes.push_back(GemmShape{size, size, size, type, "square", ""});
    }
  }
  return shapes;
}

std::vector<GemmShape> misaligned_shapes(const std::vector<DataType>& types) {
  std::vector<GemmShape> shapes;
  for (int64_t size : {int64_t{1000}, int64_t{4091}, int64_t{4097}, int64_t{8191}, int64_t{12289}}) {
    add_for_types(shapes, types, size, size, size, "misaligned", "");
  }
  add_for_types(shapes, types, 4095, 4096, 4096, "misaligned", "odd_m");
  add_for_types(shapes, types, 4096, 4096, 4095, "misaligned", "odd_k");
  add_for_types(shapes, types, 4096, 50257, 4096, "misaligned", "gpt2_logits");
  add_for_types(shapes, types, 2048, 5461, 2048, "misaligned", "llama_ffn_h2048");
  return shapes;
}

std::vector<GemmShape> grid_shapes(DataType type) {
  std::vector<GemmShape> shapes;
  const std::array<int64_t, 3> sizes{1024, 4096, 16384};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) shapes.push_back(GemmShape{m, n, k, type, "grid", ""});
    }
  }
  return shapes;
}

std::vector<GemmShape> parse_gemm_shapes(std::istream& in, std::string_view source) {
  std::vector<GemmShape> shapes;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const std::string where = std::string(source) + ":" + std::to_string(line_number);
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;) tokens.push_back(token);
    if (tokens.empty()) continue;
    if (tokens.size() < 4 || tokens.size() > 5) {
      throw InputError(where + ": " + std::to_string(tokens.size()) +
                       " fields; expected a line `M N K dtype [label]` with dtype one of " +
                       valid_type_names());
    }
    GemmShape shape;
    shape.m = parse_dimension(tokens[0], "M", where);
    shape.n = parse_dimension(tokens[1], "N", where);
    shape.k = parse_dimension(tokens[2], "K", where);
    shape.dtype = parse_gemm_data_type(tokens[3], where);
    shape.set = "file";
    if (tokens.size() == 5) {
      if (!is_valid_label(tokens[4])) {
        throw InputError(where + ": label '" + tokens[4] +
                         "' may hold only letters, digits and _ . : / + -");
      }
      shape.label = tokens[4];
    }
    shapes.push_back(shape);
  }
  if (in.bad()) throw InputError(std::string(source) + ": read error");
  return shapes;
}

std::vector<GemmShape> read_gemm_shapes_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("shapes file '" + path + "' cannot be opened");
  return parse_gemm_shapes(in, path);
}

std::string format_gemm_shape_line(const GemmShape& shape) {
  if (!is_valid_label(shape.label)) {
    throw InputError("label '" + shape.label + "' may hold only letters, digits and _ . : / + -");
  }
  std::string line = std::to_string(shape.m) + " " + std::to_string(shape.n) + " " +
                     std::to_string(shape.k) + " " + std::string(gemm_data_type_name(shape.dtype));
  if (!shape.label.empty()) line += " " + shape.label;
  return line;
}

}  // namespace clustersim::calibrate
