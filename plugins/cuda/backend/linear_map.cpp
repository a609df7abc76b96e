#include "linear_map.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cuda_plugin {
namespace {

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// A map whose every row has at most one term, source 0: `offset_of(row)` gives the input offset or −1 (zero).
template <class F>
LinearMap gather(const Shape& input, int64_t rows, F offset_of) {
  LinearMap m;
  m.rows = rows;
  m.source_elements = {count(input)};
  m.row_start.reserve(static_cast<size_t>(rows) + 1);
  m.row_start.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = offset_of(r);
    if (at >= 0) m.terms.push_back({0, at, 1.0f});
    m.row_start.push_back(static_cast<int64_t>(m.terms.size()));
  }
  return m;
}

// Image [H, W, C] offsets of output pixel (y, x), channel c, of an [OH, OW, C] image.
struct ImageIndex {
  int64_t H, W, C;
  int64_t at(int64_t y, int64_t x, int64_t c) const { return (y * W + x) * C + c; }
};

// oneDNN's resampling coordinates for output index o of an axis from `in` to `out` (float arithmetic, as it does).
float source_coordinate(int64_t o, int64_t out, int64_t in) {
  return (static_cast<float>(o) + 0.5f) * static_cast<float>(in) / static_cast<float>(out) - 0.5f;
}

struct Taps {
  int64_t index[2];
  float weight[2];
};

Taps axis_taps(int64_t o, int64_t out, int64_t in, bool nearest) {
  const float s = source_coordinate(o, out, in);
  if (nearest) {
    const int64_t i = std::clamp(static_cast<int64_t>(std::round(s)), int64_t{0}, in - 1);
    return {{i, i}, {1.0f, 0.0f}};
  }
  const float lo = std::floor(s);
  const float frac = s - lo;
  const int64_t i = static_cast<int64_t>(lo);
  return {{std::clamp(i, int64_t{0}, in - 1), std::clamp(i + 1, int64_t{0}, in - 1)}, {1.0f - frac, frac}};
}

}  // namespace

LinearMap LinearMap::transposed(int32_t source) const {
  LinearMap t;
  t.rows = source_elements.at(static_cast<size_t>(source));
  t.source_elements = {rows};
  std::vector<int64_t> per(static_cast<size_t>(t.rows) + 1, 0);
  for (const Term& term : terms)
    if (term.source == source) ++per[static_cast<size_t>(term.offset) + 1];
  std::partial_sum(per.begin(), per.end(), per.begin());
  t.row_start = per;
  t.terms.resize(static_cast<size_t>(per.back()));
  std::vector<int64_t> next(per.begin(), per.end() - 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = row_start[static_cast<size_t>(r)]; k < row_start[static_cast<size_t>(r) + 1]; ++k) {
      const Term& term = terms[static_cast<size_t>(k)];
      if (term.source == source)
        t.terms[static_cast<size_t>(next[static_cast<size_t>(term.offset)]++)] = {0, r, term.weight};
    }
  return t;
}

std::vector<float> LinearMap::apply(const std::vector<const float*>& inputs, int64_t batch) const {
  std::vector<float> out(static_cast<size_t>(batch * rows), 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t k = row_start[static_cast<size_t>(r)]; k < row_start[static_cast<size_t>(r) + 1]; ++k) {
        const Term& t = terms[static_cast<size_t>(k)];
        sum += t.weight * inputs[static_cast<size_t>(t.source)][b * source_elements[static_cast<size_t>(t.source)] + t.offset];
      }
      out[static_cast<size_t>(b * rows + r)] = sum;
    }
  return out;
}

LinearMap concat_map(const std::vector<Shape>& inputs, size_t axis) {
  // Output index (outer, j, inner), j along the joined axis: which input holds j, and where.
  int64_t outer = 1, inner = 1, joined = 0;
  for (size_t d = 0; d < axis; ++d) outer *= inputs[0][d];
  for (size_t d = axis + 1; d < inputs[0].size(); ++d) inner *= inputs[0][d];
  std::vector<int64_t> first_of;  // the joined index where each input starts
  for (const Shape& s : inputs) first_of.push_back(joined), joined += s[axis];
  LinearMap m;
  m.rows = outer * joined * inner;
  for (const Shape& s : inputs) m.source_elements.push_back(count(s));
  m.row_start.reserve(static_cast<size_t>(m.rows) + 1);
  m.row_start.push_back(0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < joined; ++j) {
      const size_t i = static_cast<size_t>(std::upper_bound(first_of.begin(), first_of.end(), j) - first_of.begin()) - 1;
      const int64_t width = inputs[i][axis], local = j - first_of[i];
      for (int64_t k = 0; k < inner; ++k) {
        m.terms.push_back({static_cast<int32_t>(i), (o * width + local) * inner + k, 1.0f});
        m.row_start.push_back(static_cast<int64_t>(m.terms.size()));
      }
    }
  return m;
}

LinearMap transpose_map(const Shape& input, const std::vector<size_t>& perm) {
  Shape out;
  for (size_t p : perm) out.push_back(input[p]);
  const std::vector<int64_t> in_strides = strides_of(input), out_strides = strides_of(out);
  return gather(input, count(out), [&](int64_t r) {
    int64_t at = 0;
    for (size_t k = 0; k < out.size(); ++k) at += (r / out_strides[k] % out[k]) * in_strides[perm[k]];
    return at;
  });
}

LinearMap zero_padding_map(const Shape& image, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  const ImageIndex in{image[0], image[1], image[2]};
  const ImageIndex out{in.H + top + bottom, in.W + left + right, in.C};
  return gather(image, out.H * out.W * out.C, [&](int64_t r) -> int64_t {
    const int64_t c = r % out.C, x = r / out.C % out.W - left, y = r / (out.C * out.W) - top;
    return y >= 0 && y < in.H && x >= 0 && x < in.W ? in.at(y, x, c) : -1;
  });
}

LinearMap cropping_map(const Shape& image, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  const ImageIndex in{image[0], image[1], image[2]};
  const ImageIndex out{in.H - top - bottom, in.W - left - right, in.C};
  return gather(image, out.H * out.W * out.C, [&](int64_t r) {
    const int64_t c = r % out.C, x = r / out.C % out.W, y = r / (out.C * out.W);
    return in.at(y + top, x + left, c);
  });
}

LinearMap depth_to_space_map(const Shape& image, int64_t block) {
  // DCR order: channel (i · block + j) · C' + c of pixel (h, w) goes to pixel (h · block + i, w · block + j).
  const ImageIndex in{image[0], image[1], image[2]};
  const int64_t Co = in.C / (block * block), OW = in.W * block;
  return gather(image, in.H * block * OW * Co, [&](int64_t r) {
    const int64_t c = r % Co, x = r / Co % OW, y = r / (Co * OW);
    return in.at(y / block, x / block, ((y % block) * block + x % block) * Co + c);
  });
}

LinearMap resize_map(const Shape& image, int64_t height, int64_t width, bool nearest) {
  const ImageIndex in{image[0], image[1], image[2]};
  LinearMap m;
  m.rows = height * width * in.C;
  m.source_elements = {count(image)};
  m.row_start.reserve(static_cast<size_t>(m.rows) + 1);
  m.row_start.push_back(0);
  for (int64_t y = 0; y < height; ++y) {
    const Taps ty = axis_taps(y, height, in.H, nearest);
    for (int64_t x = 0; x < width; ++x) {
      const Taps tx = axis_taps(x, width, in.W, nearest);
      for (int64_t c = 0; c < in.C; ++c) {
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) {
            const float w = ty.weight[a] * tx.weight[b];
            if (w != 0.0f) m.terms.push_back({0, in.at(ty.index[a], tx.index[b], c), w});
          }
        m.row_start.push_back(static_cast<int64_t>(m.terms.size()));
      }
    }
  }
  return m;
}

}  // namespace cuda_plugin
